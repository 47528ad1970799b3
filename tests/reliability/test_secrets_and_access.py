"""Secrets and access: a planted secret is found nowhere the console writes or shows (bar the
server's own database, which keeps job secrets for reruns, user-only); the server listens on
loopback and wants its token; read-only mode is enforced in the client layer, below the keys."""

from __future__ import annotations

import os
import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from huggingface_hub.errors import BadRequestError
from tests.jobwait import wait_stage
from tests.reliability.conftest import fast_policy, job_count, run_python
from tests.reliability.test_hostile_text import screen_text
from tests.ui.conftest import console_labels, mounted_screen, shown, wait_for, wait_thread

from console import config as config_mod
from console import paths
from console.backend import ReadOnlyError, connect
from console.server import paths as server_paths
from console.server.faults import Fault
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen

ENV_SECRET = "hf_PLANTEDenvTOKEN0123456789abcdef"
JOB_SECRET = "sk-PLANTEDjobSECRET-9876543210"
SSE = {"accept": "text/event-stream"}
SECRET_DB = ("jobs.sqlite3", "jobs.sqlite3-wal", "jobs.sqlite3-shm")

LEAKY = (
    "import os, sys\n"
    "print('token is', os.environ.get('HF_TOKEN'))\n"
    "print('env', sorted(os.environ.items()))\n"
    "print('again', os.environ.get('HF_TOKEN'), file=sys.stderr)\n"
    "sys.exit(3)\n"
)


def _files_holding(root: Path, needles: list[bytes]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path} holds {n!r}" for n in needles if n in data]
    return found


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_planted_secret_is_never_written_or_shown(monkeypatch, tmp_path, _isolated_dirs):
    monkeypatch.setenv("HF_TOKEN", ENV_SECRET)  # huggingface_hub's own token, in our env
    cfg = config_mod.Config(namespace="oncall")
    config_mod.save(cfg)  # the config file too
    # an in-process server in this data dir; the rerun ships the dataset file (a bucket upload): not 1 s
    backend = connect(cfg, policy=fast_policy(timeout=20.0, budget=60.0))
    leaky = server_paths.tenant_artifacts_dir("acme") / "leaky.py"  # a folder of this machine its job sees
    leaky.write_text(LEAKY)
    dataset = str(paths.training_dir() / "data" / "acme.jsonl")
    rerun_id = None
    try:
        # A console job (its command carries the dataset, so the TUI can rerun it) whose
        # script prints its token and its whole environment.
        job = backend.api.run_job(
            image="python:3.12", command=["uv", "run", str(leaky), "--dataset", dataset,
                                          "--max-steps", "1"],
            flavor="t4-small", labels=console_labels("acme"), timeout=120,
            secrets={"HF_TOKEN": JOB_SECRET}, namespace=backend.namespace)
        assert await wait_thread(wait_stage, backend, job.id) == "ERROR"
        log = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace))
        assert "token is ***" in log and "again ***" in log  # masked by the server's log pump
        info = backend.api.inspect_job(job_id=job.id, namespace=backend.namespace)
        assert info.secrets == {"HF_TOKEN": None}  # names only
        with pytest.raises(BadRequestError, match="secrets.B: expected") as err:
            backend.api.run_job(image="python:3.12", command=["x"], secrets={"A": JOB_SECRET,
                                "B": {"nested": JOB_SECRET}}, namespace=backend.namespace)
        assert JOB_SECRET not in str(err.value)

        app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
        async with app.run_test(size=(160, 48)) as pilot:
            await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id, what="the row")
            app.jobs_table.select_job(job.id)
            await wait_for(pilot, lambda: app.log_pane.ended, what="the log")
            await pilot.press("R")  # a rerun confirmation, then its notification
            await mounted_screen(pilot, ConfirmScreen, what="the rerun confirmation")
            await pilot.press("y")
            # the rerun first ships the training scripts to the namespace's bucket: seconds
            # alone, more under a loaded suite
            try:
                await wait_for(pilot, lambda: any(n.message.startswith(f"Rerun of {job.id}: ")
                                                  for n in shown(app)), timeout=60, what="the rerun")
            except AssertionError as exc:  # say what the console said instead
                raise AssertionError(f"{exc}; notifications: {[n.message for n in shown(app)]}") from None
            painted = screen_text(app)
            notes = " ".join(n.message for n in shown(app))
            for secret in (ENV_SECRET, JOB_SECRET):
                assert secret not in painted and secret not in notes
                assert all(secret not in line for line in app.log_pane.lines)
        note = next(n for n in notes.split("Rerun of ")[1:] if n.startswith(job.id))
        rerun_id = note.removeprefix(f"{job.id}: ").split()[0]
        assert rerun_id != job.id
        rerun = backend.api.inspect_job(job_id=rerun_id, namespace=backend.namespace)
        # the rerun is a fresh console training run of the same request ...
        assert rerun.labels["tenant"] == "acme" and rerun.labels["app"] == "console"
        assert "--dataset" in rerun.command and dataset in rerun.command
        # ... that carries no secret: not the job's (never readable back), not our own token
        assert not rerun.secrets
        env = " ".join(f"{k}={v}" for k, v in (rerun.environment or {}).items())
        assert ENV_SECRET not in env and JOB_SECRET not in env
    finally:
        if rerun_id is not None:
            backend.api.cancel_job(job_id=rerun_id, namespace=backend.namespace)
            await wait_thread(wait_stage, backend, rerun_id)
        backend.close()

    needles = [ENV_SECRET.encode(), JOB_SECRET.encode()]
    home = _isolated_dirs
    data = paths.data_dir()
    leaks = [x for x in _files_holding(home, needles) if Path(x.split(" holds ")[0]).name
             not in SECRET_DB]
    assert leaks == []
    # Job secrets are kept for reruns, duplicates and scheduled runs: in the server's database
    # only, readable by the user alone, and the environment's own token never at all.
    assert not _files_holding(home, [ENV_SECRET.encode()])
    for name in SECRET_DB:
        db = server_paths.server_dir() / name
        if db.exists():
            assert _mode(db) & 0o077 == 0, f"{db} is {oct(_mode(db))}"
    assert _mode(data) == 0o700


def test_the_server_is_loopback_only_and_wants_its_token(server):
    host, port = server._sock.getsockname()[:2] if server._sock else ("127.0.0.1", server.port)
    assert host == "127.0.0.1" and server.url.startswith("http://127.0.0.1:")
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": server.token}):
        req = urllib.request.Request(f"{server.url}/api/jobs/oncall", headers=headers)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
        assert err.value.code == 401


def test_a_jobs_log_and_metrics_streams_want_the_token_too(server, backend):
    job = run_python(backend, "import time\nprint('private training data', flush=True)\n"
                              "time.sleep(60)")
    wait_stage(backend, job.id, ("RUNNING",))  # live: both streams are open to the token
    base = f"{server.url}/api/jobs/{backend.namespace}/{job.id}"
    try:
        for stream in ("logs", "metrics"):
            for auth in ({}, {"authorization": "Bearer wrong"}, {"authorization": server.token}):
                req = urllib.request.Request(f"{base}/{stream}", headers={**SSE, **auth})
                with pytest.raises(urllib.error.HTTPError) as err:
                    urllib.request.urlopen(req, timeout=5)
                assert err.value.code == 401, (stream, auth)
                assert b"private training data" not in err.value.read()
            req = urllib.request.Request(f"{base}/{stream}", headers={
                **SSE, "authorization": f"Bearer {server.token}"})
            with urllib.request.urlopen(req, timeout=5) as resp:  # the same, with the token
                assert resp.status == 200
                assert resp.headers["content-type"].startswith("text/event-stream")
                if stream == "logs":
                    assert any(b"private training data" in resp.readline() for _ in range(20))
    finally:
        backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)


def test_token_server_info_and_data_dir_are_user_only(monkeypatch):
    monkeypatch.delenv("CONSOLE_SERVER_TOKEN", raising=False)
    os.umask(0o022)  # a permissive umask must not matter
    backend = connect(config_mod.Config(namespace="oncall"))
    try:
        assert _mode(paths.data_dir()) == 0o700
        assert _mode(server_paths.token_path()) == 0o600
        assert _mode(server_paths.server_info_path()) == 0o600
        assert _mode(server_paths.db_path()) == 0o600
    finally:
        backend.close()


MUTATING_CALLS = [
    ("run_job", dict(image="python:3.12", command=["true"])),
    ("run_uv_job", dict(script="x.py")),
    ("cancel_job", dict(job_id="x")),
    ("rerun_job", dict(job_id="x")),
    ("update_job_labels", dict(job_id="x", labels={})),
    ("create_scheduled_job", dict(image="python:3.12", command=["true"], schedule="@daily")),
    ("delete_scheduled_job", dict(scheduled_job_id="x")),
    ("suspend_scheduled_job", dict(scheduled_job_id="x")),
    ("resume_scheduled_job", dict(scheduled_job_id="x")),
    ("update_scheduled_job_schedule", dict(scheduled_job_id="x", schedule="@daily")),
    ("trigger_scheduled_job", dict(scheduled_job_id="x")),
    ("update_scheduled_job_labels", dict(scheduled_job_id="x", labels={})),
    ("create_repo", dict(repo_id="me/x")),
    ("upload_file", dict(path_or_fileobj=b"x", path_in_repo="x", repo_id="me/x")),
    ("delete_repo", dict(repo_id="me/x")),
]


@pytest.mark.parametrize("name,kwargs", MUTATING_CALLS, ids=[c[0] for c in MUTATING_CALLS])
def test_read_only_refuses_every_mutating_call_before_the_network(server, cfg, name, kwargs):
    cfg.read_only = True
    backend = connect(cfg, policy=fast_policy())
    try:
        assert backend.read_only
        server.faults.add(Fault("delay", seconds=0, times=None))  # records every request
        if "repo" not in name and name != "upload_file":
            kwargs = {**kwargs, "namespace": backend.namespace}
        with pytest.raises(ReadOnlyError, match="read-only"):
            getattr(backend.api, name)(**kwargs)
        assert server.faults.fired == []  # nothing was sent
        assert job_count(backend) == 0  # reads still work
    finally:
        backend.close()


async def test_the_ui_refuses_cleanly_when_only_the_client_layer_knows(server, cfg):
    writer = connect(cfg, policy=fast_policy())
    job = run_python(writer, "import time; time.sleep(60)")
    await wait_thread(wait_stage, writer, job.id, ("RUNNING",))
    cfg.read_only = True
    backend = connect(cfg, policy=fast_policy())
    try:
        app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
        app.read_only = False  # as if a key binding forgot to check: the client layer refuses
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id, what="the row")
            app.jobs_table.select_job(job.id)
            await pilot.press("c")
            await mounted_screen(pilot, ConfirmScreen, what="the dialog")
            await pilot.press("y")
            await wait_for(pilot, lambda: any("read-only" in n.message
                                              for n in shown(app)), what="the refusal")
            assert app.is_running
        assert writer.api.inspect_job(job_id=job.id, namespace=cfg.namespace).status.stage == \
            "RUNNING"
    finally:
        backend.close()
        writer.api.cancel_job(job_id=job.id, namespace=cfg.namespace)
        writer.close()
