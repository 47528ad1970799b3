"""The what-if's numbers as `console whatif --json` writes them (`Projection.to_dict`), which plan
can run Jobs, and whether a model fits a flavor: checked on the cost model itself, in process."""

from __future__ import annotations

from dataclasses import replace

import pytest

from console.costs import (
    Calibration,
    FlavorCalibration,
    RunSpec,
    cheaper_flavors_that_fit,
    estimate_run,
    flavor_fits,
    timeout_rule,
)
from console.cron import runs_per_month
from console.inputs import CostInputError
from console.prices import shipped_price_book
from console.scenario import Scenario, plan_refusal, project


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
        "max_steps": None,
        "batch_size": 4,
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


def _book(**per_hour):
    book = shipped_price_book()
    return replace(book, flavors={**book.flavors, **{
        name.replace("_", "-"): replace(book.flavors[name.replace("_", "-")], price_per_hour=p)
        for name, p in per_hour.items()}})


def _cal(**factors):
    return Calibration({f.replace("_", "-"): FlavorCalibration(f.replace("_", "-"), x, 3, 0.0, 0.0)
                        for f, x in factors.items()}, overall_factor=None, runs=3)


def test_a_projection_uses_the_price_book_and_calibration_it_is_given():
    scenario = Scenario(tenants=2, run=RunSpec(1, 1000, 1, "l4x1"), builder=RunSpec(7, 1000, 1, "a100-large"))
    base = project(scenario)
    dear = project(scenario, _book(l4x1=8.0, a100_large=25.0))
    assert dear.per_run.cost_usd == pytest.approx(base.per_run.cost_usd * 10)
    assert dear.builder_per_run.cost_usd == pytest.approx(base.builder_per_run.cost_usd * 10)
    slow = project(scenario, calibration=_cal(l4x1=1.5, a100_large=2.0))
    assert slow.per_run.hours == pytest.approx(base.per_run.hours * 1.5)
    assert slow.builder_per_run.hours == pytest.approx(base.builder_per_run.hours * 2.0)
    assert project(Scenario()).builder_per_run is None


def test_an_unknown_plan_in_a_projection_is_refused_with_the_plans():
    with pytest.raises(CostInputError, match=r"^unknown plan 'gold'; plans: free, pro, team, enterprise$"):
        project(Scenario(plan="gold"))


def test_cheaper_flavors_are_those_that_fit_and_cost_less_cheapest_first():
    spec = RunSpec(1, 1000, 1, "a10g-large")
    names = [e.flavor for e in cheaper_flavors_that_fit(spec)]
    assert names and "a10g-large" not in names
    costs = [e.cost_usd for e in cheaper_flavors_that_fit(spec)]
    assert costs == sorted(costs) and all(c < estimate_run(spec).cost_usd for c in costs)
    # a flavor priced up, or calibrated slower, is no longer cheaper
    assert "l4x1" not in [e.flavor for e in cheaper_flavors_that_fit(spec, _book(l4x1=100.0))]
    assert "l4x1" not in [e.flavor for e in cheaper_flavors_that_fit(spec, calibration=_cal(l4x1=50.0))]
    # and the current flavor calibrated fast leaves nothing cheaper
    assert cheaper_flavors_that_fit(spec, calibration=_cal(a10g_large=0.01)) == []


def test_the_first_flavor_of_the_table_being_the_current_one_hides_no_other():
    spec = RunSpec(0.5, 1000, 1, "t4-small")
    names = [e.flavor for e in cheaper_flavors_that_fit(spec, _book(t4_small=100.0))]
    assert "t4-medium" in names and "t4-small" not in names


def test_a_flavor_that_costs_the_same_is_not_cheaper():
    spec = RunSpec(1, 1000, 1, "a10g-large")
    same = _book(a10g_largex2=1.50, a10g_small=100.0, l4x1=100.0, t4_small=100.0, t4_medium=100.0)
    assert "a10g-largex2" not in [e.flavor for e in cheaper_flavors_that_fit(spec, same)]
    cheaper = _book(a10g_largex2=1.49)
    assert "a10g-largex2" in [e.flavor for e in cheaper_flavors_that_fit(spec, cheaper)]


def test_an_unsloth_run_is_compared_with_unsloth_runs():
    spec = RunSpec(1, 1000, 1, "a10g-large", unsloth=True)
    assert all(e.unsloth for e in cheaper_flavors_that_fit(spec))
