"""Bulk actions by filter: the plan lists exactly what changes with its money, and only the
typed count applies it; a wrong count and read-only mode change nothing."""

from __future__ import annotations

import sys

import pytest
from tests.oncall.conftest import job_stage, labels, wait_stage

from console.oncall import BulkRefused, apply_bulk, plan_bulk
from console.oncall.bulk import check_confirmation


def test_bulk_cancel_by_tenant_lists_acmes_running_jobs_and_cancels_exactly_them_after_the_count(
    backend, fleet
):
    plan = plan_bulk(backend.api, "cancel", "tenant:acme", namespace=backend.namespace)
    assert sorted(i.target_id for i in plan.items) == fleet["acme"]
    assert plan.count == 2 and all(i.tenant == "acme" for i in plan.items)
    for item in plan.items:
        assert item.delta_usd is not None and item.delta_usd < 0  # what cancelling saves
        assert "saves up to" in item.money and "RUNNING" in item.what
    assert plan.total_usd == pytest.approx(sum(i.delta_usd for i in plan.items))
    assert plan.lines()[-1].startswith("cancel 2 jobs: saves $")

    for wrong in ("3", "", "yes", None, "1"):
        with pytest.raises(BulkRefused, match="must be the count 2"):
            apply_bulk(backend.api, plan, wrong, namespace=backend.namespace)
    assert all(job_stage(backend, j) == "RUNNING" for j in fleet["acme"])

    result = apply_bulk(backend.api, plan, "2", namespace=backend.namespace)
    assert result.done == 2 and not result.failed
    for job_id in fleet["acme"]:
        assert wait_stage(backend, job_id) == "CANCELED"
    assert job_stage(backend, fleet["globex"]) == "RUNNING"
    assert job_stage(backend, fleet["done"]) == "COMPLETED"


def _schedule(backend, tenant: str, env: str):
    return backend.api.create_scheduled_job(
        image="python:3.12", command=[sys.executable, "-c", "print('run')"], schedule="0 3 * * 1",
        flavor="l4x1", timeout=600, namespace=backend.namespace,
        labels=labels(tenant, env=env, model_b="1p8", examples="1000", epochs="1"),
    )


def test_bulk_suspend_and_resume_by_label_say_the_money_per_month(backend):
    dev = [_schedule(backend, "acme", "dev"), _schedule(backend, "globex", "dev")]
    prod = _schedule(backend, "initech", "prod")
    plan = plan_bulk(backend.api, "suspend", "label:env=dev", namespace=backend.namespace)
    assert sorted(i.target_id for i in plan.items) == sorted(s.id for s in dev)
    assert all(i.money.startswith("saves $0.75/month") for i in plan.items), plan.lines()
    assert plan.total_usd == pytest.approx(-1.50, abs=0.01) and plan.per == "month"
    assert plan.lines()[-1] == "suspend 2 schedules: saves $1.50/month"
    assert apply_bulk(backend.api, plan, 2, namespace=backend.namespace).done == 2
    states = {s.id: s.suspend for s in backend.api.list_scheduled_jobs(namespace=backend.namespace)}
    assert states == {dev[0].id: True, dev[1].id: True, prod.id: False}

    resume = plan_bulk(backend.api, "resume", "label:env=dev tenant:acme", namespace=backend.namespace)
    assert [i.target_id for i in resume.items] == [dev[0].id]
    assert resume.items[0].money.startswith("+$0.75/month")
    trigger = plan_bulk(backend.api, "trigger", "tenant:initech", namespace=backend.namespace)
    assert trigger.items[0].delta_usd == pytest.approx(0.1728, abs=1e-3)
    assert trigger.per == ""


def test_read_only_empty_filters_and_nothing_matching_are_refused(backend):
    plan = plan_bulk(backend.api, "cancel", "tenant:nobody", namespace=backend.namespace, read_only=True)
    with pytest.raises(BulkRefused, match="read-only"):
        check_confirmation(plan, "0")
    with pytest.raises(BulkRefused, match="nothing to cancel"):
        check_confirmation(plan_bulk(backend.api, "cancel", "tenant:nobody",
                                     namespace=backend.namespace), "0")
    with pytest.raises(BulkRefused, match="needs a filter"):
        plan_bulk(backend.api, "cancel", "  ", namespace=backend.namespace)
    with pytest.raises(BulkRefused, match="unknown action"):
        plan_bulk(backend.api, "delete", "tenant:acme", namespace=backend.namespace)
