"""A job held in SCHEDULING (a server with every slot taken) past `notify.scheduling_after_s` is
notified once, with its flavor and how long it waited, to a real webhook on 127.0.0.1; the
queue depth per flavor is in each pass's report and status line."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from tests.oncall.conftest import NAMESPACE, SLEEPER, log_has, run_python, wait_for
from tests.ui.conftest import shown

from console.backend import Backend, connect
from console.config import Config, ServerSettings
from console.oncall import Watcher
from console.oncall.store import OnCallStore
from console.server import LocalServer, ServerOptions


@pytest.fixture
def one_slot(monkeypatch) -> Iterator[LocalServer]:
    srv = LocalServer(ServerOptions(namespace=NAMESPACE, max_running_jobs=1))
    srv.start()
    monkeypatch.setenv("CONSOLE_SERVER_TOKEN", srv.token)
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def held(one_slot, listener) -> Iterator[tuple[Backend, Config, str]]:
    """A backend whose one slot runs a sleeper, and a second job held in SCHEDULING behind it."""
    cfg = Config(namespace=NAMESPACE, plan="pro", endpoint=one_slot.url,
                 server=ServerSettings(max_running_jobs=1))
    cfg.notify.webhook_url = listener.url + "/hook"
    cfg.notify.scheduling_after_s = 1  # the config's floor is 60 s; the watcher takes any
    backend = connect(cfg)
    busy = run_python(backend, SLEEPER, tenant="acme", timeout=600)
    wait_for(lambda: log_has(backend, busy.id, "loading the data set"))
    queued = run_python(backend, SLEEPER, tenant="globex", timeout=600)
    try:
        yield backend, cfg, queued.id
    finally:
        for job_id in (queued.id, busy.id):
            backend.api.cancel_job(job_id=job_id, namespace=backend.namespace)
        backend.close()


def test_a_job_stuck_in_scheduling_is_notified_once_to_the_webhook(held, listener, tmp_path):
    backend, cfg, queued = held
    store = OnCallStore(tmp_path / "oncall.sqlite")
    watcher = Watcher(backend.api, cfg, namespace=backend.namespace, store=store)
    first = watcher.check()  # not yet past the threshold: counted in the queue, not news
    assert [q.waiting for q in first.queue] == [1] and first.queue[0].flavor == "t4-small"
    time.sleep(1.2)
    events = []
    for _ in range(3):
        events += watcher.check().events
    restarted = Watcher(backend.api, cfg, namespace=backend.namespace, store=store)
    events += restarted.check().events
    [event] = events
    assert event.kind == "scheduling" and event.job_id == queued and event.level == "WARN"
    assert event.title == f"globex job {queued} stuck in SCHEDULING on t4-small"
    assert event.text.startswith("waiting for t4-small for ")
    assert "Waiting for a free slot" in event.text  # the server's own word for why
    watcher.notifier.flush(10)
    restarted.notifier.flush(10)
    wait_for(lambda: listener.bodies("/hook"), timeout=10)
    time.sleep(0.3)
    [body] = listener.bodies("/hook")
    assert body["event"] == "scheduling" and body["job_id"] == queued
    assert body["data"]["flavor"] == "t4-small" and body["data"]["waiting_s"] >= 1
    assert store.sent_keys([f"scheduling:{queued}"]) == {f"scheduling:{queued}"}
    watcher.close()
    restarted.close()


def test_the_status_line_counts_the_queue_per_flavor_and_since_when(held, tmp_path):
    backend, cfg, queued = held
    time.sleep(1.2)
    report = Watcher(backend.api, cfg, namespace=backend.namespace,
                     store=OnCallStore(tmp_path / "oncall.sqlite")).check()
    assert report.stuck.keys() == {queued}
    line = report.line()
    assert "1 waiting: 1 on t4-small since " in line and "(1 stuck)" in line
    [queue] = report.to_dict()["queue"]
    assert queue["flavor"] == "t4-small" and queue["waiting"] == 1 and queue["longest_s"] >= 1


async def test_the_stage_cell_says_the_job_waits_and_on_what(held):
    from console.ui.app import ConsoleApp

    backend, cfg, queued = held
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False, watch_seconds=1.0,
                     first_watch_seconds=1.2)
    async with app.run_test(size=(80, 24)) as pilot:
        deadline = time.monotonic() + 30
        while (m := app.jobs_table.oncall_mark(queued)) is None and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert m is not None and m.stage.startswith("WAIT ")
        cells = [str(c) for c in app.jobs_table.get_row(queued)]
        assert cells[3].startswith("WAIT ") and "stuck in SCHEDULING on t4-small for" in cells[-1]
        assert any("stuck in SCHEDULING" in (n.title or "") for n in shown(app))
        status = str(app.query_one("#status-line").render())
        assert "1 WAIT t4-small " in status  # the queue: how many wait, on what, for how long


def test_watch_and_fleet_show_print_the_queue_per_flavor(held, capsys):
    import os

    from console.cli import main
    from console.config import save

    backend, cfg, queued = held
    cfg.notify.webhook_url = None
    cfg.notify.scheduling_after_s = 3600  # waiting, not stuck yet
    save(cfg, os.environ["CONSOLE_CONFIG"])
    assert main(["watch", "--once"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "1 waiting: 1 on t4-small since " in out[-1] and "stuck" not in out[-1], out
    assert main(["fleet", "show"]) == 0
    [line] = [x for x in capsys.readouterr().out.splitlines() if x.startswith("SCHEDULING: ")]
    assert line.startswith("SCHEDULING: 1 waiting: 1 on t4-small since ")
