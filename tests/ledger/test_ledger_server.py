"""The ledger against the embedded Jobs server: real jobs, real processes, read through HfApi."""

from __future__ import annotations

import math

import pytest
from huggingface_hub import HfApi

from console.ledger import Ledger, record_from_api, summarize
from console.prices import shipped_price_book
from console.server import LocalServer, ServerOptions

NS = "ops"


@pytest.fixture
def api():
    with LocalServer(ServerOptions(namespace=NS, port=0, max_running_jobs=4)) as srv:
        yield HfApi(endpoint=srv.url, token=srv.token)


def run(api: HfApi, code: str, **kw):
    return api.run_job(image="python:3.12", command=["python", "-c", code], namespace=NS, **kw)


def wait(api: HfApi, job_id: str, timeout: float = 30):
    return api.wait_for_job(job_id, timeout=timeout, poll_interval=0.05, namespace=NS)


def test_two_finished_jobs_then_refresh_again_and_restart_add_nothing(api, tmp_path):
    labels = {"app": "console", "tenant": "acme", "env": "dev", "kind": "sft", "model_b": "0p001",
              "examples": "64", "epochs": "1", "unsloth": "0", "run": "acme-1"}
    a = run(api, "import time; time.sleep(1.2)", flavor="l4x1", labels=labels, timeout=60)
    b = run(api, "import time; time.sleep(0.5)", flavor="a10g-large",
            labels={**labels, "tenant": "globex", "run": "globex-1"}, timeout=60)
    done = {j.id: wait(api, j.id) for j in (a, b)}
    assert all(j.status.stage == "COMPLETED" for j in done.values())

    ledger = Ledger(tmp_path / "ledger.sqlite")
    snap = record_from_api(ledger, api, namespace=NS)
    assert snap.recorded.added == 2 and len(ledger) == 2
    assert snap.prices.source == "live"  # the server's list_jobs_hardware answered
    # the price in effect: what the server's hardware list says (per minute, x 60, read back to the
    # hourly quote's cent it was rounded from)
    prices = {hw.name: round(hw.unit_cost_usd * 60, 2) for hw in api.list_jobs_hardware()}
    for job_id, info in done.items():
        e = ledger.get(job_id)
        assert e.running_seconds == info.durations.running_secs
        assert e.price_per_hour == pytest.approx(prices[e.flavor])
        assert e.price_per_hour == pytest.approx(shipped_price_book().price_per_hour(e.flavor), rel=1e-4)
        assert e.cost_usd == pytest.approx(math.ceil(e.running_seconds / 60) * 60 / 3600 * e.price_per_hour)
    assert {ledger.get(a.id).tenant, ledger.get(b.id).tenant} == {"acme", "globex"}

    assert record_from_api(ledger, api, namespace=NS).recorded.added == 0
    restarted = Ledger(tmp_path / "ledger.sqlite")
    assert record_from_api(restarted, api, namespace=NS).recorded.added == 0
    assert len(restarted) == 2


def test_a_timed_out_job_is_wasted_spend(api, tmp_path):
    job = run(api, "import time; time.sleep(30)", flavor="t4-small", timeout=2,
              labels={"app": "console", "tenant": "acme", "kind": "sft"})
    info = wait(api, job.id)
    assert info.status.stage == "ERROR"
    ledger = Ledger(tmp_path / "ledger.sqlite")
    record_from_api(ledger, api, namespace=NS)
    e = ledger.get(job.id)
    assert e.wasted and e.stage == "ERROR"
    assert 1 <= e.running_seconds <= 4
    assert e.price_per_hour == pytest.approx(0.40, rel=1e-4)
    assert e.cost_usd == pytest.approx(math.ceil(e.running_seconds / 60) * 60 / 3600 * e.price_per_hour)
    s = summarize(ledger.entries())
    assert s.wasted_runs == 1 and s.wasted_usd == pytest.approx(e.cost_usd)


def test_running_jobs_are_in_flight_until_they_end(api, tmp_path):
    job = run(api, "import time; print('up', flush=True); time.sleep(30)", flavor="l4x1", timeout=60)
    api.wait_for_job(job.id, timeout=10, poll_interval=0.05, namespace=NS, stages=["RUNNING"])
    ledger = Ledger(tmp_path / "ledger.sqlite")
    snap = record_from_api(ledger, api, namespace=NS)
    assert snap.recorded.added == 0 and [j.id for j in snap.recorded.active] == [job.id]
    api.cancel_job(job_id=job.id, namespace=NS)
    wait(api, job.id)
    assert record_from_api(ledger, api, namespace=NS).recorded.added == 1
    assert ledger.get(job.id).stage == "CANCELED"
