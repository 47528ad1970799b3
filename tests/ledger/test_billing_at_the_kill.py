"""Billing at the kill and for exposed ports: a job that reaches its timeout is killed there and billed
its timeout at most; each port a job exposes adds a flat $0.01/h (reference §3).

Real jobs on the embedded server (real processes, its sandbox), read through HfApi; the ledger
costs them with `costs.job_cost`, per minute as HF bills (reference §3) or per second.
"""

from __future__ import annotations

import socket
import sqlite3

import pytest
from huggingface_hub import HfApi
from jobjson import job, tenant_labels
from tests.conftest import soak

from console.costs import job_cost
from console.jobs import job_row
from console.ledger import Ledger, entry_from_job, record_from_api
from console.prices import EXPOSED_PORT_PRICE_PER_HOUR, shipped_price_book
from console.server import LocalServer, ServerOptions

NS = "ops"
T4 = 0.40  # t4-small $/h, reference §3

# A job that holds on when asked to stop, as a trainer saving a checkpoint on SIGTERM does.
STUBBORN = (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, lambda *a: print('saving...', flush=True))\n"
    "print('training', flush=True)\n"
    "for _ in range(600):\n"
    "    time.sleep(0.1)\n"
)


@pytest.fixture
def api():
    with LocalServer(ServerOptions(namespace=NS, port=0, max_running_jobs=4)) as srv:
        yield HfApi(endpoint=srv.url, token=srv.token)


def _run(api: HfApi, timeout: int, tenant: str):
    return api.run_job(image="python:3.12", command=["python", "-c", STUBBORN], namespace=NS,
                       flavor="t4-small", timeout=timeout,
                       labels={**tenant_labels(tenant), "timeout": str(timeout)})


# The billed job's timeout: a full minute under CONSOLE_SOAK=full (one second late would bill two
# minutes); by default a few seconds, killed as exactly at its timeout and billed its one minute.
LONG_TIMEOUT = soak(5, 60)


def test_a_job_past_its_timeout_is_killed_at_it_and_billed_its_timeout_at_most(api, tmp_path):
    short = _run(api, 2, "acme")
    minute = _run(api, LONG_TIMEOUT, "globex")
    done = {j.id: api.wait_for_job(j.id, timeout=120, poll_interval=0.1, namespace=NS) for j in (short, minute)}
    for info in done.values():
        assert info.status.stage == "ERROR" and "timed out" in (info.status.message or "")
    assert done[short.id].durations.running_secs <= 2
    assert done[minute.id].durations.running_secs <= LONG_TIMEOUT
    span = (done[minute.id].finished_at - done[minute.id].started_at).total_seconds()
    assert span <= LONG_TIMEOUT + 0.5, f"the job ran {span:.1f} s on a {LONG_TIMEOUT} s timeout"
    logs = list(api.fetch_job_logs(job_id=minute.id, namespace=NS))
    assert "training" in logs

    ledger = Ledger(tmp_path / "ledger.sqlite")
    record_from_api(ledger, api, namespace=NS)
    e = ledger.get(minute.id)
    assert e.wasted and e.running_seconds <= LONG_TIMEOUT
    assert e.cost_usd == pytest.approx(60 / 3600 * e.price_per_hour)  # one minute, not two
    per_second = Ledger(tmp_path / "per-second.sqlite")
    record_from_api(per_second, api, namespace=NS, granularity="second")
    quick = per_second.get(short.id)
    assert 0 < quick.cost_usd <= 2 / 3600 * quick.price_per_hour + 1e-12


def test_a_kill_reported_late_is_billed_the_timeout_not_a_minute_more():
    # HF's answer for a 2m timeout that ran 2m01s: the minute the kill came late is not billed
    late = job("late", stage="ERROR", flavor="t4-small", ran=121, message="Job timed out after 2m",
               labels={**tenant_labels("acme"), "timeout": "120"})
    prices = shipped_price_book()
    entry = entry_from_job(late, prices)
    assert entry.wasted and entry.running_seconds == 120
    assert entry.cost_usd == pytest.approx(2 / 60 * T4)
    assert job_row(late, prices=prices).cost_usd == pytest.approx(entry.cost_usd)
    assert job_cost(121, "t4-small", prices, timeout_s=120) == pytest.approx(entry.cost_usd)
    # no label: the server's own message says the timeout
    bare = job("bare", stage="ERROR", flavor="t4-small", ran=121, message="Job timed out after 2m (timeoutSeconds)")
    assert entry_from_job(bare, prices).cost_usd == pytest.approx(2 / 60 * T4)
    # a job that failed on its own is billed what it ran
    failed = job("failed", stage="ERROR", flavor="t4-small", ran=121, message="Job failed with exit code: 1",
                 labels={**tenant_labels("acme"), "timeout": "3600"})
    assert entry_from_job(failed, prices).cost_usd == pytest.approx(3 / 60 * T4)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_an_exposed_job_is_billed_each_port_at_a_cent_an_hour(api, tmp_path):
    first, second, public = _free_port(), _free_port(), _free_port()
    sleep = ["python", "-c", "import time; time.sleep(3)"]
    at_start = api.run_job(image="python:3.12", command=sleep, namespace=NS, flavor="l4x1", timeout=60,
                           expose=[first])
    later = api.run_job(image="python:3.12", command=sleep, namespace=NS, flavor="l4x1", timeout=60)
    plain = api.run_job(image="python:3.12", command=sleep, namespace=NS, flavor="l4x1", timeout=60)
    api.wait_for_job(later.id, timeout=30, poll_interval=0.05, namespace=NS, stages=["RUNNING"])
    api.update_job_expose(job_id=later.id, expose=[second], expose_public=[public], namespace=NS)  # hf jobs expose
    done = {j.id: api.wait_for_job(j.id, timeout=60, poll_interval=0.1, namespace=NS)
            for j in (at_start, later, plain)}
    assert all(info.status.stage == "COMPLETED" for info in done.values())

    ledger = Ledger(tmp_path / "ledger.sqlite")
    snap = record_from_api(ledger, api, namespace=NS)
    ports = {job_id: ledger.get(job_id) for job_id in done}
    one, two, none = ports[at_start.id], ports[later.id], ports[plain.id]
    assert (one.exposed_ports, two.exposed_ports, none.exposed_ports) == (1, 2, 0)
    minute = 60 / 3600
    assert one.ports_usd == pytest.approx(minute * EXPOSED_PORT_PRICE_PER_HOUR)
    assert two.ports_usd == pytest.approx(minute * 2 * EXPOSED_PORT_PRICE_PER_HOUR)
    assert none.ports_usd == 0
    assert one.cost_usd == pytest.approx(minute * (one.price_per_hour + EXPOSED_PORT_PRICE_PER_HOUR))
    assert none.cost_usd == pytest.approx(minute * none.price_per_hour)
    for job_id, info in done.items():  # the jobs table bills what the ledger does
        assert job_row(info, prices=snap.prices).cost_usd == pytest.approx(ports[job_id].cost_usd)

    per_second = Ledger(tmp_path / "per-second.sqlite")
    record_from_api(per_second, api, namespace=NS, granularity="second")
    exact = per_second.get(later.id)
    assert exact.ports_usd == pytest.approx(exact.running_seconds / 3600 * 2 * EXPOSED_PORT_PRICE_PER_HOUR)
    reopened = Ledger(tmp_path / "ledger.sqlite")  # kept in the file
    assert reopened.get(later.id).ports_usd == pytest.approx(two.ports_usd)


def test_a_ledger_file_of_the_first_schema_opens_and_bills_ports(tmp_path):
    path = tmp_path / "ledger.sqlite"
    Ledger(path).record([entry_from_job(job("old", flavor="t4-small", ran=600, labels=tenant_labels("acme")))])
    with sqlite3.connect(path) as conn:  # as a console before exposed ports were billed wrote it
        conn.execute("ALTER TABLE entries DROP COLUMN ports_usd")
        conn.execute("ALTER TABLE entries DROP COLUMN exposed_ports")
        conn.execute("PRAGMA user_version = 1")
    ledger = Ledger(path)
    old = ledger.get("old")
    assert (old.exposed_ports, old.ports_usd) == (0, 0) and old.cost_usd == pytest.approx(10 / 60 * T4)
    exposed = job("new", flavor="t4-small", ran=600, labels=tenant_labels("acme"))
    exposed.expose = [8000]
    ledger.record([entry_from_job(exposed)])
    assert ledger.get("new").ports_usd == pytest.approx(10 / 60 * EXPOSED_PORT_PRICE_PER_HOUR)
