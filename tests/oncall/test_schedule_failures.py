"""A schedule whose runs fail `notify.schedule_failures` times in a row (3) is flagged in each pass's
report, its status line and `console watch`, and notified once to a real webhook on 127.0.0.1,
until one of its runs passes again. The runs are real: a scheduled job on the embedded server,
triggered, failing until a file its tenant's artifacts folder holds says it is fixed."""

from __future__ import annotations

import os
import sys
import time

from tests.oncall.conftest import NAMESPACE, labels, wait_for, wait_stage

from console.cli import main
from console.config import Config, save
from console.ledger import Ledger
from console.oncall import Watcher
from console.oncall.store import OnCallStore
from console.server import paths

FIXED = "fixed"
CODE = (
    "import os, sys\n"
    f"ok = os.path.exists(os.path.join(os.environ['CONSOLE_ARTIFACTS_DIR'], {FIXED!r}))\n"
    "print('training', flush=True)\n"
    "sys.exit(0 if ok else 'the data set is missing a column')\n"
)


def _run(backend, sj_id: str, expect: str) -> str:
    job = backend.api.trigger_scheduled_job(scheduled_job_id=sj_id, namespace=backend.namespace)
    assert wait_stage(backend, job.id) == expect
    return job.id


def test_three_failed_runs_in_a_row_flag_the_schedule_and_notify_once_until_a_run_passes(
    backend, cfg, listener, tmp_path
):
    cfg.notify.webhook_url = listener.url + "/hook"
    sj = backend.api.create_scheduled_job(
        image="python:3.12", command=[sys.executable, "-u", "-c", CODE], schedule="@hourly",
        flavor="t4-small", labels=labels("acme"), timeout=60, namespace=backend.namespace,
    )
    fixed = paths.tenant_artifacts_dir("acme") / FIXED
    store = OnCallStore(tmp_path / "oncall.sqlite")
    ledger = Ledger(tmp_path / "ledger.sqlite")

    def watcher() -> Watcher:
        return Watcher(backend.api, cfg, namespace=backend.namespace, store=store, ledger=ledger)

    watch = watcher()
    runs = [_run(backend, sj.id, "ERROR") for _ in range(2)]
    report = watch.check()
    assert report.failing == [] and "schedule" not in report.line()
    assert not [e for e in report.events if e.kind == "schedule_failing"]

    runs.append(_run(backend, sj.id, "ERROR"))
    report = watch.check()
    [streak] = report.failing
    assert (streak.scheduled_job_id, streak.failures, streak.passed_job_id) == (sj.id, 3, None)
    assert {streak.first_job_id, streak.last_job_id} <= set(runs)  # (runs a second apart come in order)
    assert f"1 schedule failing ({sj.id} 3x)" in report.line()
    assert report.to_dict()["failing_schedules"][0]["failures"] == 3
    [event] = [e for e in report.events if e.kind == "schedule_failing"]
    assert event.level == "ERROR" and event.tenant == "acme" and event.job_id == streak.last_job_id
    assert event.title == f"acme schedule {sj.id} failed 3 runs in a row"
    assert "the data set is missing a column" in event.text or "exit code" in event.text

    runs.append(_run(backend, sj.id, "ERROR"))  # a fourth: still flagged, not said again
    report = watch.check()
    assert [s.failures for s in report.failing] == [4]
    assert not [e for e in report.events if e.kind == "schedule_failing"]
    assert not [e for e in watcher().check().events if e.kind == "schedule_failing"]  # nor after a restart

    fixed.write_text("1")
    time.sleep(1.1)  # the ledger orders runs by the second they were created
    try:
        passed = _run(backend, sj.id, "COMPLETED")
        report = watch.check()
        assert report.failing == [] and "schedule" not in report.line()
    finally:
        fixed.unlink()
    time.sleep(1.1)

    again = [_run(backend, sj.id, "ERROR") for _ in range(3)]  # a new streak: said once more
    report = watch.check()
    [streak] = report.failing
    assert streak.failures == 3 and streak.passed_job_id == passed and streak.first_job_id in again
    assert len([e for e in report.events if e.kind == "schedule_failing"]) == 1

    watch.notifier.flush(10)
    wait_for(lambda: len([b for b in listener.bodies("/hook") if b["event"] == "schedule_failing"]) == 2,
             timeout=10)
    posted = [b for b in listener.bodies("/hook") if b["event"] == "schedule_failing"]
    assert [b["data"]["passed_job_id"] for b in posted] == [None, passed]
    assert all(b["data"]["scheduled_job_id"] == sj.id and b["data"]["threshold"] == 3 for b in posted)
    watch.close()


def test_console_watch_prints_the_failing_schedule_and_takes_the_threshold_from_the_config(
    server, backend, capsys
):
    cfg = Config(namespace=NAMESPACE, plan="pro", endpoint=server.url)
    cfg.notify.schedule_failures = 2
    save(cfg, os.environ["CONSOLE_CONFIG"])
    sj = backend.api.create_scheduled_job(
        image="python:3.12", command=[sys.executable, "-u", "-c", CODE], schedule="@hourly",
        flavor="t4-small", labels=labels("globex"), timeout=60, namespace=backend.namespace,
    )
    _run(backend, sj.id, "ERROR")
    assert main(["watch", "--once"]) == 0
    assert "schedule" not in capsys.readouterr().out
    _run(backend, sj.id, "ERROR")
    assert main(["watch", "--once"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(f"schedule_failing globex schedule {sj.id} failed 2 runs in a row" in line for line in out), out
    assert f"1 schedule failing ({sj.id} 2x)" in out[-1]
    assert main(["config", "set", "notify.schedule_failures", "0"]) == 2
    assert "notify.schedule_failures" in capsys.readouterr().err

