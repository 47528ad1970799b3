"""Real tiny training runs (training/sft_lora.py --base-model tiny-random) writing a Trackio store.

One healthy run and one with a NaN forced at step 12 (the script's `--inject-nan-at-step`), run in
parallel once per test session — under pytest-xdist the first worker trains and the others wait for
its store (a file lock in the session's shared tmp folder); the store is away from the user's data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from filelock import FileLock

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "training" / "sft_lora.py"
DATASET = REPO / "training" / "data" / "acme.jsonl"
PROJECT = "console-tests"
HEALTHY = "acme-healthy"
POISONED = "acme-nan"
STEPS = 24
NAN_AT = 12


@dataclass(frozen=True)
class TrainedStore:
    trackio_dir: Path
    project: str
    healthy: str
    poisoned: str
    steps: int
    nan_at: int
    logs: dict[str, str]


def _train(run_name: str, trackio_dir: Path, root: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ)
    env.update(
        TRACKIO_DIR=str(trackio_dir),
        CONSOLE_ARTIFACTS_DIR=str(root / "artifacts"),
        HF_HOME=str(root / "hf-home"),
        HF_HUB_OFFLINE="1",
        HF_HUB_DISABLE_TELEMETRY="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS="1",
    )
    env.pop("HF_TOKEN", None)
    cmd = [
        sys.executable, str(SCRIPT), "--base-model", "tiny-random", "--dataset", str(DATASET),
        "--max-steps", str(STEPS), "--learning-rate", "5e-3", "--logging-steps", "1",
        "--run-name", run_name, "--trackio-project", PROJECT, *extra,
    ]
    return subprocess.Popen(cmd, env=env, cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="session")
def trained_store(tmp_path_factory) -> TrainedStore:
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # this session's folder, the same for every xdist worker
    root = shared / "trained-store"
    with FileLock(str(shared / "trained-store.lock")):
        if (root / "done.json").exists():
            logs = json.loads((root / "done.json").read_text())
        else:
            logs = _train_both(root)
            (root / "done.json").write_text(json.dumps(logs))
    assert "VERDICT: PASS" in logs[HEALTHY], logs[HEALTHY][-2000:]
    assert "VERDICT: FAIL nan_loss" in logs[POISONED], logs[POISONED][-2000:]
    return TrainedStore(root / "trackio", PROJECT, HEALTHY, POISONED, STEPS, NAN_AT, logs)


def _train_both(root: Path) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    trackio_dir = root / "trackio"
    procs = {
        HEALTHY: _train(HEALTHY, trackio_dir, root),
        POISONED: _train(POISONED, trackio_dir, root, "--inject-nan-at-step", str(NAN_AT)),
    }
    logs = {}
    for name, proc in procs.items():
        out, _ = proc.communicate(timeout=300)
        logs[name] = out
    return logs
