"""`console watch`: the detectors and notifications headless — `--once --json` prints one JSON
event per line, a restart repeats nothing, and with no server it says so and starts none."""

from __future__ import annotations

import json
import os

from tests.oncall.conftest import FAILING, NAMESPACE, run_python, wait_stage

from console.cli import main
from console.config import Config, save


def _config(server, **notify) -> None:
    cfg = Config(namespace=NAMESPACE, plan="pro", endpoint=server.url, monthly_budget_usd=1.0)
    for key, value in notify.items():
        setattr(cfg.notify, key, value)
    save(cfg, os.environ["CONSOLE_CONFIG"])


def _events(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_watch_once_json_prints_each_event_once_and_posts_it_to_the_webhook(
    server, backend, listener, capsys
):
    _config(server, webhook_url=listener.url + "/hook")
    job = run_python(backend, FAILING, tenant="globex")
    assert wait_stage(backend, job.id) == "ERROR"

    assert main(["watch", "--once", "--json"]) == 0
    events = {e["event"]: e for e in _events(capsys.readouterr().out)}
    assert set(events) == {"job_error", "budget", "status"}, events
    status = events.pop("status")
    assert [f["tenant"] for f in status["failing_tenants"]] == ["globex"]
    failed = events["job_error"]
    assert failed["job_id"] == job.id and failed["tenant"] == "globex"
    assert failed["data"]["reason"] == "ZeroDivisionError: division by zero"
    assert failed["data"]["reason_source"] == "exception"
    assert "over budget" in events["budget"]["title"]
    assert events["budget"]["data"]["budget_usd"] == 1.0
    posted = {b["event"] for b in listener.bodies("/hook")}
    assert posted == {"job_error", "budget"}  # delivered before --once returned

    # a restart: the same failure and the same month's budget are not news again; the picture is
    assert main(["watch", "--once", "--json"]) == 0
    [status] = _events(capsys.readouterr().out)
    assert status["event"] == "status" and status["failures_24h"][0]["job_id"] == job.id
    assert len(listener.posts) == 2


def test_watch_text_mode_prints_events_and_a_status_line(server, backend, capsys):
    _config(server)
    job = run_python(backend, "import sys; sys.exit(3)", tenant="acme")
    assert wait_stage(backend, job.id) == "ERROR"
    assert main(["watch", "--once"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(f"acme sft job {job.id} failed: exit 3" in line for line in out), out
    assert any(line.startswith(f"watch: failing now: acme sft job {job.id} failed at ") for line in out), out
    assert out[-1].startswith("watch: 0 running, 0 stalled, 0 will time out, 1 tenant failing (acme)")


def test_watch_never_starts_a_server_and_says_so_in_one_line(capsys):
    save(Config(namespace=NAMESPACE), os.environ["CONSOLE_CONFIG"])
    assert main(["watch", "--once", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("watch: no local Jobs server is running")
    data_dir = os.environ["CONSOLE_DATA_DIR"]
    assert not os.path.exists(os.path.join(data_dir, "server.json"))


async def test_a_failure_only_a_read_only_web_tab_saw_still_reaches_watch_and_the_webhook(
    server, backend, cfg, listener, capsys, monkeypatch
):
    import time

    from tests.ui.conftest import shown

    from console.oncall.notify import CONSUMER_ENV
    from console.ui.app import ConsoleApp

    _config(server, webhook_url=listener.url + "/hook")
    cfg.read_only = True
    cfg.notify.webhook_url = listener.url + "/hook"
    monkeypatch.setenv(CONSUMER_ENV, "web")  # as `console web` serves it
    job = run_python(backend, "print('VERDICT: FAIL bad_data: 3 rows without a prompt'); raise SystemExit(1)",
                     tenant="wayne")
    assert wait_stage(backend, job.id) == "ERROR"

    tab = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=1.0,
                     first_watch_seconds=0.3)
    async with tab.run_test(size=(80, 24)) as pilot:  # the tab shows it, and nobody reads it
        deadline = time.monotonic() + 60
        while not any(job.id in n.title for n in shown(tab)):
            assert time.monotonic() < deadline, "the web tab never showed the failure"
            await pilot.pause(0.1)
    posted = [b for b in listener.bodies("/hook") if b.get("job_id") == job.id]
    assert len(posted) == 1  # the webhook channel was given it (by the tab's pass), once

    assert main(["watch", "--once", "--json", "--since", "2h"]) == 0
    lines = _events(capsys.readouterr().out)
    [event] = [e for e in lines if e["event"] == "job_error"]
    assert event["job_id"] == job.id and "bad_data" in event["data"]["reason"]
    [status] = [e for e in lines if e["event"] == "status"]
    [failing] = status["failing_tenants"]
    assert failing["tenant"] == "wayne" and failing["job_id"] == job.id and "bad_data" in failing["reason"]
    assert "failing_schedules" in status and "stale_live" in status

    # given to `watch` now: not printed again as news, but the picture still says it
    assert main(["watch", "--once"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("20") and job.id in line for line in out)  # no event line
    assert any(line.startswith(f"watch: failing now: wayne sft job {job.id}") and "bad_data" in line
               for line in out), out
    assert [b.get("job_id") for b in listener.bodies("/hook")].count(job.id) == 1
