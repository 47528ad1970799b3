"""Helpers for the training-script tests: the scripts run as subprocesses with this Python."""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
TRAINING = REPO / "training"
DATA = TRAINING / "data"
SFT = TRAINING / "sft_lora.py"
VALIDATE = TRAINING / "validate_dataset.py"
DPO = TRAINING / "dpo_lora.py"
KTO = TRAINING / "kto_lora.py"
EMBED = TRAINING / "sentence_transformer.py"
GRPO = TRAINING / "grpo_lora.py"
REWARD = TRAINING / "reward_lora.py"
RECIPES = (SFT, DPO, KTO, GRPO, REWARD, EMBED)


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def lines(self) -> list[str]:
        return self.stdout.splitlines()

    @property
    def last_line(self) -> str:
        lines = [line for line in self.lines if line.strip()]
        return lines[-1] if lines else ""


def script_env(tmp_path: Path, **extra: str | None) -> dict[str, str]:
    """An offline environment with its own Trackio store and artifact folder under tmp_path."""
    env = dict(os.environ)
    env.pop("HF_TOKEN", None)
    env.update(
        TRACKIO_DIR=str(tmp_path / "trackio"),
        CONSOLE_ARTIFACTS_DIR=str(tmp_path / "artifacts"),
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",  # two runs share two cores under pytest -n 2
        PYTHONUNBUFFERED="1",
    )
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def hub_env(tmp_path: Path, hub, **extra: str | None) -> dict[str, str]:
    """`script_env` online, pushing to `hub` (an embedded server) as a job there would."""
    return script_env(tmp_path, HF_HUB_OFFLINE=None, HF_ENDPOINT=hub.url, HF_TOKEN=hub.token,
                      HF_HUB_DISABLE_TELEMETRY="1", HF_HOME=str(tmp_path / "hf"), **extra)


def sft_hub_args(run_name: str, repo: str, *extra: str, learning_rate: str = "5e-3",
                 max_steps: int = 30) -> list[str]:
    """sft_lora.py's arguments for a small real run of the offline tiny model pushing to `repo`."""
    return [
        "--base-model", "tiny-random",
        "--dataset", str(DATA / "acme.jsonl"),
        "--max-steps", str(max_steps),
        "--learning-rate", learning_rate,
        "--lora-r", "8",
        "--lora-alpha", "16",
        "--batch-size", "8",
        "--max-length", "256",
        "--run-name", run_name,
        "--trackio-project", "tenants",
        "--hub-model-id", repo,
        *extra,
    ]  # fmt: skip


def run(
    script: Path,
    args: list[str],
    env: dict[str, str],
    *,
    cwd: Path | None = None,
    python_flags: tuple[str, ...] = (),
    timeout: float = 240,
) -> Result:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, *python_flags, str(script), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)


class ForkedRun:
    """A run a fork server started: `pid` to kill it as a job's timeout does, `wait()` for its result."""

    def __init__(self, server: ForkServer, pid: int, out_dir: Path, t0: float) -> None:
        self.server, self.pid, self.out_dir, self.t0 = server, pid, out_dir, t0

    def wait(self) -> Result:
        try:
            answer = self.server.read_answer()
        finally:
            self.server.lock.release()
        code = answer["returncode"]
        stdout = (self.out_dir / "stdout").read_text(errors="replace")
        stderr = (self.out_dir / "stderr").read_text(errors="replace")
        shutil.rmtree(self.out_dir, ignore_errors=True)
        return Result(code, stdout, stderr, time.monotonic() - self.t0)


class ForkServer:
    """A fork server (forkserver.py): imports the training stack once in `env`, then runs each
    script in a child forked from it. The libraries read the Hub endpoint, offline mode and HF_HOME
    at import, so the runs it serves have those as `env` has them."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None

    def _started(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("forkserver.py"))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env, text=True,
            )  # fmt: skip
        return self.proc

    def read_answer(self) -> dict:
        assert self.proc is not None and self.proc.stdout is not None
        answer = self.proc.stdout.readline()
        assert answer, "the fork server died"
        return json.loads(answer)

    def start(self, script: Path, args: list[str], env: dict[str, str], *, cwd: Path | None = None,
              timeout: float = 240) -> ForkedRun:
        """Start `script` in a forked child; the server serves nothing else until its `wait()`."""
        out_dir = Path(tempfile.mkdtemp(prefix="forked-run-"))
        request = {
            "script": str(script), "args": [str(a) for a in args], "env": env,
            "cwd": str(cwd or Path.cwd()), "stdout": str(out_dir / "stdout"), "stderr": str(out_dir / "stderr"),
            "timeout": timeout,
        }  # fmt: skip
        t0 = time.monotonic()
        self.lock.acquire()
        try:
            server = self._started()
            assert server.stdin is not None
            server.stdin.write(json.dumps(request) + "\n")
            server.stdin.flush()
            pid = self.read_answer()["pid"]
        except BaseException:
            self.lock.release()
            raise
        return ForkedRun(self, pid, out_dir, t0)

    def run(self, script: Path, args: list[str], env: dict[str, str], *, cwd: Path | None = None,
            timeout: float = 240) -> Result:
        """`run`, in a child forked from this server: the same run (its own process, environment,
        arguments, output and exit status) without paying for the training stack's import."""
        return self.start(script, args, env, cwd=cwd, timeout=timeout).wait()

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout):
                if stream is not None:
                    stream.close()

    def __enter__(self) -> ForkServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _offline_env() -> dict[str, str]:
    base = script_env(Path(tempfile.gettempdir()))
    for key in ("TRACKIO_DIR", "CONSOLE_ARTIFACTS_DIR"):
        base.pop(key, None)
    return base


_OFFLINE = ForkServer(_offline_env())
atexit.register(_OFFLINE.close)


def run_forked(script: Path, args: list[str], env: dict[str, str], *, cwd: Path | None = None,
               timeout: float = 240) -> Result:
    """`run`, in a child forked from this test process's offline fork server (started on first use).

    The same run (its own process, environment, arguments, output and exit status) without paying
    for torch's import each time; for real training runs that do not reach a Hub. Runs that measure
    imports or need a different PYTHONPATH use `run`; runs pushing to a Hub use a `ForkServer` of
    their own, started with their environment.
    """
    return _OFFLINE.run(script, args, env, cwd=cwd, timeout=timeout)


def parse_fields(line: str) -> dict[str, str]:
    """`key=value` pairs of a VERDICT / progress line."""
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def read_trackio(tmp_path: Path, project: str, run_name: str) -> dict:
    """Read a run back through trackio's own API, in a process that sees our TRACKIO_DIR."""
    code = (
        "import json, sys, trackio\n"
        "from trackio.sqlite_storage import SQLiteStorage\n"
        "project, run = sys.argv[1], sys.argv[2]\n"
        "api = trackio.Api()\n"
        "runs = [r.name for r in api.runs(project)]\n"
        "alerts = api.alerts(project, run=run)\n"
        "logs = SQLiteStorage.get_logs(project, run)\n"
        "print(json.dumps({'runs': runs, 'alerts': alerts, 'logs': logs}, default=str))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, project, run_name],
        env=script_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def load_module(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
