"""The what-if's numbers as `console whatif --json` writes them (`Projection.to_dict`), which plan
can run Jobs, and whether a model fits a flavor: checked on the cost model itself, in process."""

from __future__ import annotations

import pytest

from console.costs import RunSpec, Scenario, flavor_fits, plan_refusal, project, timeout_rule
from console.cron import runs_per_month


def test_the_json_record_of_a_projection_names_every_assumption_and_figure():
    scenario = Scenario(tenants=12, cadence="weekly", run=RunSpec(3, 2000, 2, "a10g-large", unsloth=True),
                        plan="team", seats=3, timeout_buffer=1.5, timeout_overhead_s=600)
    p = project(scenario)
    d = p.to_dict()
    assert d == {
        "tenants": 12,
        "cadence": "0 0 * * 0",
        "model_b": 3,
        "examples": 2000,
        "epochs": 2,
        "flavor": "a10g-large",
        "unsloth": True,
        "plan": "team",
        "seats": 3,
        "hours_per_run": p.per_run.hours,
        "cost_per_run_usd": p.per_run.cost_usd,
        "timeout_seconds": p.per_run.timeout_seconds,
        "timeout_rule": timeout_rule(p.per_run, 1.5),
        "timeout_overhead_s": 600,
        "timeout_buffer": 1.5,
        "price_per_hour": 1.50,
        "multiplier": 1.0,
        "multiplier_source": p.per_run.multiplier_source,
        "calibration_factor": 1.0,
        "runs_per_month": p.runs_per_month,
        "tenants_monthly_usd": p.tenants_usd,
        "builder_monthly_usd": 0.0,
        "plan_floor_usd": 60.0,
        "monthly_usd": p.monthly_usd,
        "plan_can_run_jobs": True,
        "prices": p.price_source,
    }
    # the figures hold together
    assert d["hours_per_run"] == pytest.approx(0.1 * 3 * 2 * 2 * 1.0 / 2)  # Unsloth: twice as fast
    assert d["tenants_monthly_usd"] == pytest.approx(12 * d["runs_per_month"] * d["cost_per_run_usd"])
    assert d["monthly_usd"] == pytest.approx(d["tenants_monthly_usd"] + 60.0)
    assert d["prices"].startswith("shipped prices")
    assert "x 1.5" in d["timeout_rule"]


def test_a_builder_model_adds_its_own_runs():
    p = project(Scenario(tenants=2, run=RunSpec(1, 1000, 1, "l4x1"), builder=RunSpec(7, 5000, 1, "a100-large"),
                         builder_cadence="monthly"))
    d = p.to_dict()
    assert d["builder_monthly_usd"] == pytest.approx(p.builder_per_run.cost_usd * runs_per_month("monthly"))
    assert d["builder_monthly_usd"] > 0
    assert d["monthly_usd"] == pytest.approx(d["tenants_monthly_usd"] + d["builder_monthly_usd"] + 9.0)


@pytest.mark.parametrize("plan", ["pro", "team", "enterprise"])
def test_paid_plans_run_jobs(plan):
    assert plan_refusal(plan) is None


def test_the_free_plan_cannot_run_jobs_and_says_what_to_set():
    assert plan_refusal("free") == (
        "the free plan cannot run HF Jobs (they need a positive credit balance, in practice PRO, Team or "
        'Enterprise); set plan = "pro" or higher in the config')
    assert not project(Scenario(plan="free")).to_dict()["plan_can_run_jobs"]


def test_an_unknown_plan_lists_the_plans():
    assert plan_refusal("gold") == "unknown plan 'gold'; plans: free, pro, team, enterprise"


@pytest.mark.parametrize(("flavor", "model_b", "full", "fits"), [
    ("t4-small", 0.5, False, True),
    ("t4-small", 13, False, False),
    ("a100-large", 13, False, True),
    ("a100-large", 13, True, False),  # a full fine-tune needs far more than LoRA
    ("h200x8", 13, True, True),
])
def test_whether_a_model_fits_a_flavors_gpu_memory(flavor, model_b, full, fits):
    assert flavor_fits(flavor, model_b, full=full) is fits
