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
    assert set(events) == {"job_error", "budget"}, events
    failed = events["job_error"]
    assert failed["job_id"] == job.id and failed["tenant"] == "globex"
    assert failed["data"]["reason"] == "ZeroDivisionError: division by zero"
    assert failed["data"]["reason_source"] == "exception"
    assert "over budget" in events["budget"]["title"]
    assert events["budget"]["data"]["budget_usd"] == 1.0
    posted = {b["event"] for b in listener.bodies("/hook")}
    assert posted == {"job_error", "budget"}  # delivered before --once returned

    # a restart: the same failure and the same month's budget are not news again
    assert main(["watch", "--once", "--json"]) == 0
    assert _events(capsys.readouterr().out) == []
    assert len(listener.posts) == 2


def test_watch_text_mode_prints_events_and_a_status_line(server, backend, capsys):
    _config(server)
    job = run_python(backend, "import sys; sys.exit(3)", tenant="acme")
    assert wait_stage(backend, job.id) == "ERROR"
    assert main(["watch", "--once"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(f"acme sft job {job.id} failed: exit 3" in line for line in out), out
    assert out[-1].startswith("watch: 0 running, 0 stalled, 0 will time out")


def test_watch_never_starts_a_server_and_says_so_in_one_line(capsys):
    save(Config(namespace=NAMESPACE), os.environ["CONSOLE_CONFIG"])
    assert main(["watch", "--once", "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("watch: no local Jobs server is running")
    data_dir = os.environ["CONSOLE_DATA_DIR"]
    assert not os.path.exists(os.path.join(data_dir, "server.json"))
