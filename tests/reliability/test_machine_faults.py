"""Faults on this machine: SIGKILL while the config or the ledger is being written. (The terminal
closing under the real `console` is tests/reliability/test_terminal_loss.py; the embedded server
killed with running jobs — no orphan after restart, jobs ERROR — is tests/server/test_durability.py.)"""

from __future__ import annotations

import select
import signal
import sqlite3
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from console import config as config_mod
from console import ledger as ledger_mod
from console import paths

CONFIG_WRITER = r"""
import sys
from console import config
cfg = config.Config(namespace="oncall")
i = 0
while True:
    i += 1
    cfg.seats = i
    cfg.defaults.env = "env" + "x" * (i % 500)  # files of varying size
    config.save(cfg, sys.argv[1])
    print(i, flush=True)
"""

LEDGER_WRITER = r"""
import sys
from console.ledger import Ledger, LedgerEntry
ledger = Ledger(sys.argv[1])
i = 0
while True:
    batch = [LedgerEntry(job_id=f"job{i + k:08d}", tenant="acme", kind="sft", env="prod",
                         flavor="l4x1", price_per_hour=0.8, price_source="shipped",
                         running_seconds=60.0, running_source="durations", cost_usd=0.0134,
                         stage="COMPLETED", message=None, wasted=False, created_at=None,
                         started_at=None, finished_at=None, month="2026-12") for k in range(7)]
    ledger.record(batch)
    i += 7
    print(i, flush=True)  # everything below i is committed
"""


def _kill_mid_write(script: str, target: Path, rounds: int) -> list[int]:
    """Run a writer, SIGKILL it mid-write at a later point each round (once it has reported
    1, 38, 75, ... commits, so while it writes the next); the last count it reported."""
    reported = []
    for n in range(rounds):
        proc = subprocess.Popen([sys.executable, "-c", script, str(target)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        last = 0
        deadline = time.monotonic() + 60  # a writer that never reports fails below
        while last < 1 + 37 * n and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.05)
            if ready:
                line = proc.stdout.readline()
                if not line:
                    break
                last = int(line)
        proc.send_signal(signal.SIGKILL)
        rest, _ = proc.communicate()
        for line in rest.split():
            last = int(line)
        reported.append(last)
    return reported


def test_sigkill_while_saving_the_config_never_leaves_a_broken_file(tmp_path):
    (tmp_path / "cfg").mkdir()
    target = tmp_path / "cfg" / "config.toml"
    counts = _kill_mid_write(CONFIG_WRITER, target, rounds=6)
    assert max(counts) > 0
    cfg = config_mod.load(target)  # parses and validates: never half a file
    assert cfg.namespace == "oncall" and cfg.seats >= 1
    assert tomllib.loads(target.read_text())["seats"] == cfg.seats
    assert target.stat().st_mode & 0o077 == 0
    # a temp file a kill interrupts is only a dot-file beside it, never the config
    assert all(p.name.startswith(".config.toml.") for p in target.parent.iterdir() if p != target)


def test_sigkill_while_writing_the_ledger_loses_no_committed_entry(tmp_path):
    target = tmp_path / "ledger.sqlite"
    counts = _kill_mid_write(LEDGER_WRITER, target, rounds=6)
    assert max(counts) > 0
    with sqlite3.connect(target) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    ledger = ledger_mod.Ledger(target)
    ids = ledger.job_ids()
    assert len(ids) % 7 == 0  # whole transactions only
    assert {f"job{i:08d}" for i in range(counts[-1])} <= ids  # every reported commit is there
    assert len(ids) >= max(counts)


def test_paths_stay_in_the_test_sandbox():
    assert "home" in str(paths.data_dir())
