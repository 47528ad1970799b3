"""Logs by time: the embedded server stamps each log line as HF's logs stream does (a `timestamp`
beside each line's `data`) and the console keeps it; `console incident --since` bundles the lines
from a time on, each with its time; `console watch --since` takes failures from a time on as news."""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from tests.oncall.conftest import FAILING, NAMESPACE, run_python, wait_stage

from console.cli import main
from console.config import Config, save
from console.jobs import log_time

TWO_PARTS = "import time\nprint('before the pause', flush=True)\ntime.sleep(2)\nprint('after the pause', flush=True)\n"


def test_each_line_keeps_its_time_and_incident_since_bundles_the_lines_from_then(
    server, backend, capsys, tmp_path
):
    save(Config(namespace=NAMESPACE, endpoint=server.url), os.environ["CONSOLE_CONFIG"])
    job = run_python(backend, TWO_PARTS, tenant="acme")
    assert wait_stage(backend, job.id) == "COMPLETED"
    entries = list(backend.api.fetch_job_log_entries(job_id=job.id))
    stamps = {text: log_time(stamp) for stamp, text in entries}
    before, after = stamps["before the pause"], stamps["after the pause"]
    assert before is not None and after is not None and (after - before).total_seconds() >= 1.5
    # the plain lines are what huggingface_hub's own fetch_job_logs gives
    assert [t for _, t in entries] == list(backend.api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))

    middle = before + (after - before) / 2
    assert main(["incident", job.id, "--since", middle.isoformat(), "--out", str(tmp_path)]) == 0
    text = Path(capsys.readouterr().out.strip()).read_text(encoding="utf-8")
    log = text.split("## Log (since ", 1)[1]
    assert f"{after.astimezone(UTC):%Y-%m-%d %H:%M:%S} after the pause" in log
    assert "before the pause" not in log

    assert main(["incident", job.id, "--since", "last tuesday", "--out", str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["console: incident: --since: expected a time ago (30m, 2h, 1d), an ISO time "
                   "(2026-12-04T09:30) or HH:MM, got 'last tuesday'"], err
    assert not (tmp_path / "bad").exists()


def test_watch_since_takes_failures_from_then_on_as_news(server, backend, capsys):
    save(Config(namespace=NAMESPACE, endpoint=server.url), os.environ["CONSOLE_CONFIG"])
    job = run_python(backend, FAILING, tenant="globex")
    assert wait_stage(backend, job.id) == "ERROR"
    time.sleep(2.5)
    assert main(["watch", "--once", "--json", "--since", datetime.now(UTC).strftime("%H:%M:%S")]) == 0
    [status] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert status["event"] == "status"  # it failed before then: history, no event; the picture says it
    [failing] = status["failing_tenants"]
    assert failing["job_id"] == job.id and failing["reason"] == "ZeroDivisionError: division by zero"
    assert main(["watch", "--once", "--json", "--since", "1h"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["job_id"] for e in events if e["event"] == "job_error"] == [job.id]
    assert main(["watch", "--once", "--since", "soon"]) == 2
    assert "watch: --since: expected a time ago" in capsys.readouterr().err
