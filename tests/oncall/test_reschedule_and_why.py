"""A schedule change says its $/month before -> after; a finished job says why it failed in a
few words (the timeout, the verdict, the exception, the exit)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
from tests.oncall.conftest import FAILING, labels, run_python, wait_stage

from console.inputs import CostInputError
from console.oncall import failure_reason, reschedule_cost, why_failed


def test_weekly_to_daily_says_the_tenant_goes_from_75_cents_to_5_26_a_month(backend):
    sj = backend.api.create_scheduled_job(
        image="python:3.12", command=[sys.executable, "-c", "print('run')"], schedule="0 3 * * 1",
        flavor="l4x1", timeout=600, namespace=backend.namespace,
        labels=labels("acme", model_b="1p8", examples="1000", epochs="1"),
    )
    [read_back] = backend.api.list_scheduled_jobs(namespace=backend.namespace)
    cost = reschedule_cost(read_back, "0 3 * * *")
    assert cost.scheduled_job_id == sj.id and cost.tenant == "acme"
    assert cost.before_usd_month == pytest.approx(0.75, abs=0.005)
    assert cost.after_usd_month == pytest.approx(5.26, abs=0.005)
    assert cost.basis == "heuristic"
    assert cost.line().startswith("$0.75/month -> $5.26/month (+$4.51): 4.35 -> 30.4 runs at $0.17")
    back = reschedule_cost(SimpleNamespace(**{**vars(read_back), "schedule": "0 3 * * *"}), "@weekly")
    assert back.delta_usd_month == pytest.approx(-4.51, abs=0.01)
    with pytest.raises(CostInputError):
        reschedule_cost(read_back, "every tuesday")


def test_a_suspended_schedule_says_what_it_will_cost_once_resumed():
    sj = SimpleNamespace(id="s", schedule="0 3 * * 1", suspend=True, job_spec=SimpleNamespace(
        flavor="l4x1", labels={"app": "console", "tenant": "acme", "model_b": "1p8", "examples": "1000",
                               "epochs": "1"}))
    cost = reschedule_cost(sj, "0 3 * * *")
    assert cost.suspended and cost.after_usd_month == pytest.approx(5.26, abs=0.005)
    assert cost.line().endswith("suspended: $0 until resumed")
    unknown = reschedule_cost(SimpleNamespace(id="u", schedule="0 3 * * 1", suspend=False,
                                              job_spec=SimpleNamespace(flavor="l4x1", labels={})),
                              "0 3 * * *")
    assert unknown.basis == "unknown" and "cost per run unknown" in unknown.line()


def _finished(stage: str, message: str | None, labels: dict | None = None):
    return SimpleNamespace(id="j", labels=labels or {}, status=SimpleNamespace(stage=stage, message=message))


@pytest.mark.parametrize(("job", "tail", "expected"), [
    (_finished("ERROR", "Job timed out after 1h 30m (timeoutSeconds)", {"timeout": "5400"}),
     ["progress step=10/100"], "timeout 1h30m: killed, billed"),
    (_finished("ERROR", "Job failed with exit code: 1"),
     ["progress step=99/100", "VERDICT: FAIL diverged: loss rose 40x over 20 steps"],
     "FAIL diverged: loss rose 40x ov…"),
    (_finished("ERROR", "Job failed with exit code: 1"),
     ["Traceback (most recent call last):", '  File "x.py", line 3', "    1 / 0",
      "ZeroDivisionError: division by zero"], "ZeroDivisionError: division by…"),
    (_finished("ERROR", "Job failed with exit code: 137"), ["loading"], "exit 137"),
    (_finished("ERROR", "Job was killed by signal SIGKILL"), [], "SIGKILL"),
    (_finished("CANCELED", None), [], "canceled"),
    (_finished("COMPLETED", None), ["VERDICT: PASS run=x"], None),
    (_finished("COMPLETED", None), ["VERDICT: FAIL flat_loss: loss fell 0.2%"], "FAIL flat_loss: loss fell 0.2%"),
    (_finished("RUNNING", None), [], None),
])
def test_why_it_failed_fits_a_narrow_column(job, tail, expected):
    assert failure_reason(job, tail, width=32) == expected
    if expected:
        assert len(expected) <= 32


def test_a_real_failing_job_says_its_exception(backend):
    job = run_python(backend, FAILING, tenant="acme")
    assert wait_stage(backend, job.id) == "ERROR"
    info = backend.api.inspect_job(job_id=job.id, namespace=backend.namespace)
    tail = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace, tail=200))
    reason = why_failed(info, tail)
    assert (reason.source, reason.text) == ("exception", "ZeroDivisionError: division by zero")
    assert failure_reason(info, [], width=20) == "exit 1"
