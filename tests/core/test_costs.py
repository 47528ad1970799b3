"""The cost model against the reference document's formula, tables, cron cadences and calibration."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from console import costs, cron, inputs, reference, vram
from console.costs import Observation, RunSpec
from console.inputs import CostInputError
from console.prices import (
    PLANS,
    REFERENCE_MULTIPLIERS,
    SHIPPED_FLAVORS,
    plan_floor_usd,
    price_book_from_hardware,
    shipped_price_book,
)
from console.scenario import Scenario, plan_refusal, project


def test_every_flavor_of_the_reference_table_is_shipped_with_its_price():
    book = shipped_price_book()
    expected = {
        "t4-small": 0.40, "t4-medium": 0.60, "l4x1": 0.80, "a10g-small": 1.00, "a10g-large": 1.50,
        "l40sx1": 1.80, "a100-large": 2.50, "rtx-pro-6000": 2.75, "a10g-largex2": 3.00,
        "l4x4": 3.80, "a10g-largex4": 5.00, "h200": 5.00, "l40sx4": 8.30, "a100x4": 10.00,
        "h200x2": 10.00, "rtx-pro-6000x4": 11.00, "a100x8": 20.00, "h200x4": 20.00,
        "rtx-pro-6000x8": 22.00, "l40sx8": 23.50, "h200x8": 40.00,
        "cpu-basic": 0.01, "cpu-upgrade": 0.03, "cpu-xl": 1.00, "cpu-performance": 1.90,
    }
    assert {f.name: f.price_per_hour for f in SHIPPED_FLAVORS} == expected
    assert book.source == "shipped" and "2026-06-27" in book.describe()
    assert book.get("a10g-large").gpu_memory_gb == 24
    assert "workhorse" in book.get("a10g-large").fits


def test_plans_and_the_floor():
    assert not PLANS["free"].can_run_jobs
    assert all(PLANS[p].can_run_jobs for p in ("pro", "team", "enterprise"))
    assert plan_floor_usd("pro", 5) == 9
    assert plan_floor_usd("team", 5) == 100
    assert plan_floor_usd("enterprise", 2) == 100
    assert "cannot run HF Jobs" in plan_refusal("free")
    assert plan_refusal("team") is None


def test_the_heuristic_formula():
    est = costs.estimate_run(RunSpec(3, 1000, 3, "l4x1"))
    assert est.hours == pytest.approx(0.1 * 3 * 1 * 3 * 1.2)
    assert est.cost_usd == pytest.approx(est.hours * 0.80)
    assert est.timeout_seconds == math.ceil((est.hours * 3600 + 300) * 1.3 / 60) * 60
    assert est.multiplier_source == "reference"
    fast = costs.estimate_run(RunSpec(3, 1000, 3, "l4x1", unsloth=True))
    assert fast.hours == pytest.approx(est.hours / 2)
    padded = costs.estimate_run(RunSpec(3, 1000, 3, "l4x1"), timeout_buffer=1.5)
    assert padded.timeout_seconds > est.timeout_seconds


def test_cpu_flavors_and_unknown_flavors_are_refused_with_a_reason():
    with pytest.raises(CostInputError, match="CPU flavor"):
        costs.estimate_run(RunSpec(1, 100, 1, "cpu-basic"))
    with pytest.raises(CostInputError, match="unknown flavor"):
        costs.estimate_run(RunSpec(1, 100, 1, "warp-drive"))


@pytest.mark.parametrize(
    "field, value", [("model_b", -1), ("model_b", 0), ("examples", 0), ("epochs", float("nan")), ("model_b", 1e9)]
)
def test_absurd_inputs_are_refused(field, value):
    args = {"model_b": 3, "examples": 1000, "epochs": 3}
    args[field] = value
    with pytest.raises(CostInputError, match=field):
        costs.estimate_run(RunSpec(args["model_b"], args["examples"], args["epochs"], "l4x1"))


def test_reference_tables_agree_with_the_document():
    for row in reference.builder_rows() + reference.tenant_rows():
        assert row.time.agrees(), (row.config, row.spec.flavor, row.time)
        assert row.cost.agrees(), (row.config, row.spec.flavor, row.cost)
    for row in reference.fleet_rows():
        assert row.figure.agrees(row.at_reference_rate), row
        assert row.figure.model == pytest.approx(row.figure.document_value, rel=0.02)
    comb = reference.combined()
    assert reference.combined_agrees(comb)
    assert reference.all_agree()


def test_a_wrong_figure_would_be_caught():
    fig = reference.Figure("x", "~$0.86", 0.90)
    assert not fig.agrees()
    assert reference.Figure("x", "~$11", 11.4).agrees()
    assert not reference.Figure("x", "~$11", 11.6).agrees()


@pytest.mark.parametrize(
    "cadence, expected",
    [
        ("weekly", 365.2425 / 7 / 12),
        ("0 3 * * 1", 365.2425 / 7 / 12),
        ("monthly", 1.0),
        ("daily", 365.2425 / 12),
        ("0 0 * * 1-5", 365.2425 / 7 * 5 / 12),
        ("0 */6 * * *", 365.2425 * 4 / 12),
        ("0 0 1 */3 *", 1 / 3),
        ("*/5 * * * *", 365.2425 * 24 * 12 / 12),
    ],
)
def test_runs_per_month_come_from_the_cron_itself(cadence, expected):
    assert cron.runs_per_month(cadence) == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize(
    "cadence",
    ["0 3 * * 1", "0 0 1,15 * 5", "0 0 13 * 5", "0 0 1-7 * 1", "5 4 * 1-3 mon-fri", "0 0 29 2 *",
     "0 0 * * 0,7", "0-59/20 1,2 * * *", "30 2 */2 * sun", "0 0 L * *", "0 0 * * 5#2"],
)
def test_runs_per_month_matches_croniters_own_firings(cadence):
    """The calendar count (and the stepping fallback for L / #) agree with croniter firing by firing."""
    from datetime import UTC, datetime, timedelta

    from croniter import croniter

    start = datetime(2027, 1, 1, tzinfo=UTC)
    end = start + timedelta(days=4 * 365 + 1)
    it = croniter(cron.normalize_cron(cadence), start - timedelta(seconds=1))
    fired = 0
    while it.get_next(datetime) < end:
        fired += 1
    expected = fired / (end - start).total_seconds() * cron.MONTH_SECONDS
    assert cron.runs_per_month(cadence) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("bad", ["", "every tuesday", "61 * * * *", "* * * *", "0 0 31 2 *", "0 0 * * 9"])
def test_invalid_cron_is_refused(bad):
    with pytest.raises(CostInputError):
        cron.runs_per_month(bad)


def test_cron_described_in_words_and_next_runs():
    assert "03:00" in cron.describe_cron("0 3 * * 1")
    assert "Monday" in cron.describe_cron("0 3 * * 1")
    runs = cron.next_runs("0 3 * * 1", 3)
    assert len(runs) == 3 and all(r.weekday() == 0 and r.hour == 3 for r in runs)


def test_projection_adds_tenants_builder_and_plan_floor():
    s = Scenario(tenants=100, cadence="weekly", run=RunSpec(3, 1000, 3, "l4x1"), plan="team", seats=3,
                 builder=RunSpec(7, 3000, 3, "a100-large"))
    p = project(s)
    rpm = cron.runs_per_month("weekly")
    assert p.tenants_usd == pytest.approx(100 * rpm * 0.864)
    assert p.builder_usd == pytest.approx(rpm * 0.1 * 7 * 3 * 3 * 0.7 * 2.5)
    assert p.plan_floor_usd == 60
    assert p.monthly_usd == pytest.approx(p.tenants_usd + p.builder_usd + 60)


def test_changing_one_assumption_moves_the_projection_by_what_the_model_says():
    base = Scenario(tenants=40, cadence="weekly", run=RunSpec(3, 1000, 3, "l4x1"))
    p0 = project(base)
    more = project(Scenario(tenants=41, cadence="weekly", run=base.run))
    assert more.monthly_usd - p0.monthly_usd == pytest.approx(p0.runs_per_month * p0.per_run.cost_usd)
    monthly = project(Scenario(tenants=40, cadence="monthly", run=base.run))
    assert monthly.tenants_usd == pytest.approx(p0.tenants_usd / p0.runs_per_month, rel=1e-3)
    unsloth = project(Scenario(tenants=40, cadence="weekly", run=RunSpec(3, 1000, 3, "l4x1", True)))
    assert unsloth.tenants_usd == pytest.approx(p0.tenants_usd / 2)


def test_calibration_recovers_the_factor_the_runs_were_generated_with():
    rng = random.Random(7)
    truth = {"l4x1": 1.6, "t4-small": 0.45}
    obs = []
    for flavor, factor in truth.items():
        for _ in range(40):
            spec = RunSpec(rng.choice([1, 3, 7]), rng.randint(200, 3000), rng.choice([1, 2, 3]), flavor)
            hours = costs.estimate_run(spec).hours * factor * math.exp(rng.gauss(0, 0.1))
            obs.append(Observation(flavor, spec.model_b, spec.examples, spec.epochs, hours * 3600))
    cal = costs.calibrate(obs)
    assert cal.runs == 80
    for flavor, factor in truth.items():
        fc = cal.per_flavor[flavor]
        assert fc.factor == pytest.approx(factor, rel=0.05)
        assert fc.calibrated_error_pct < fc.heuristic_error_pct
    calibrated = costs.estimate_run(RunSpec(3, 1000, 3, "l4x1"), calibration_factor=cal.factor_for("l4x1"))
    assert calibrated.hours == pytest.approx(1.08 * cal.per_flavor["l4x1"].factor)
    # A flavor with no runs of its own falls back to the fit over all runs.
    assert cal.factor_for("a100-large") == pytest.approx(cal.overall_factor)


def test_cheaper_flavor_that_still_fits_is_suggested():
    spec = RunSpec(3, 1000, 3, "a10g-small")
    options = costs.cheaper_flavors_that_fit(spec)
    assert options and options[0].cost_usd < costs.estimate_run(spec).cost_usd
    # 3B x 1k examples x 3 epochs = 0.9 base hours; x the flavor's multiplier x its price.
    # a10g-small: 0.9 x 1.3 x $1.00 = $1.17. Cheaper, and holding a 3B LoRA run in GPU memory
    # (console.vram: ~15 GB in fp16 on a 16 GB T4), cheapest first: t4-small 0.9 x 2.0 x $0.40 =
    # $0.72 (the reference's own §4(b) row), l4x1 0.9 x 1.2 x $0.80 = $0.864, t4-medium
    # 0.9 x 2.0 x $0.60 = $1.08, l40sx1 0.9 x 0.7 x $1.80 = $1.134.
    assert [o.flavor for o in options] == ["t4-small", "l4x1", "t4-medium", "l40sx1"]
    assert [o.cost_usd for o in options] == pytest.approx([0.72, 0.864, 1.08, 1.134])
    # a full fine-tune of the same model needs ~35 GB: none of those 24 GB-or-less GPUs holds it
    full = costs.cheaper_flavors_that_fit(spec, run=vram.RunShape(3, method="full"))
    assert [o.flavor for o in full] == ["l40sx1"]


def test_live_prices_replace_shipped_ones():
    from huggingface_hub._jobs_api import JobHardwareInfo

    hw = [
        JobHardwareInfo(name="l4x1", prettyName="L4", cpu="8 vCPU", ram="30 GB", ephemeralStorage="400 GB",
                        accelerator={"type": "gpu", "model": "L4", "quantity": "1", "vram": "24 GB",
                                     "manufacturer": "Nvidia"},
                        unitCostMicroUSD=15000, unitCostUSD=0.015, unitLabel="minute"),
    ]
    book = price_book_from_hardware(hw)
    assert book.source == "live" and "live" in book.describe()
    assert book.price_per_hour("l4x1") == pytest.approx(0.9)
    assert "best $/perf" in book.get("l4x1").fits


@pytest.mark.parametrize(
    "text, seconds",
    [(7200, 7200), ("7200", 7200), ("90m", 5400), ("2h", 7200), ("1.5h", 5400), ("30s", 30), ("1d", 86400),
     (" 45M ", 2700), (1.5, 2)],
)
def test_timeouts_in_every_accepted_form(text, seconds):
    assert inputs.parse_timeout(text) == seconds


@pytest.mark.parametrize(
    "bad", ["", "abc", "-5m", "0", "5 minutes", "2h30m", "8d", True, None, float("inf"), "1e3"]
)
def test_timeouts_refused_with_a_reason(bad):
    with pytest.raises(CostInputError, match="timeout"):
        inputs.parse_timeout(bad)


@given(
    model_b=st.floats(0.001, 2000),
    examples=st.integers(1, 100_000_000),
    epochs=st.floats(0.01, 1000),
    flavor=st.sampled_from(sorted(REFERENCE_MULTIPLIERS)),
    unsloth=st.booleans(),
)
def test_property_estimates_are_positive_finite_and_consistent(model_b, examples, epochs, flavor, unsloth):
    est = costs.estimate_run(RunSpec(model_b, examples, epochs, flavor, unsloth))
    assert est.hours > 0 and math.isfinite(est.cost_usd)
    assert est.cost_usd == pytest.approx(est.hours * shipped_price_book().price_per_hour(flavor))
    assert est.timeout_seconds >= est.hours * 3600 * 1.3 - 1e-6


@given(st.integers(1, 7 * 86400))
def test_property_timeout_round_trips_through_its_formats(seconds):
    assert inputs.parse_timeout(str(seconds)) == seconds
    assert inputs.parse_timeout(f"{seconds}s") == seconds
    if seconds % 60 == 0:
        assert inputs.parse_timeout(f"{seconds // 60}m") == seconds


@given(st.text(max_size=30))
def test_property_cron_parser_never_crashes_on_junk(text):
    try:
        value = cron.runs_per_month(text)
    except CostInputError:
        return
    assert value > 0


@pytest.mark.parametrize(
    "cadence", ["0 3 * * 1", "*/15 * * * *", "30 2 1,15 * fri", "0 */6 * * *", "0 0 L * *", "0 0 * * 5#2", "@daily"]
)
@pytest.mark.parametrize(
    "after, end",
    [
        ("2026-12-15T12:00:00", "2027-01-01T00:00:00"),
        ("2026-12-15T03:00:00", "2027-01-01T00:00:00"),  # exactly on a firing: not counted
        ("2027-02-27T23:59:30", "2027-03-01T00:00:00"),
        ("2026-12-31T06:00:00", "2026-12-31T18:00:00"),  # within one day
        ("2027-01-01T00:00:00", "2026-12-01T00:00:00"),  # end before start
    ],
)
def test_count_firings_matches_stepping_croniter(cadence, after, end):
    from datetime import UTC, datetime

    from croniter import croniter

    a = datetime.fromisoformat(after).replace(tzinfo=UTC)
    e = datetime.fromisoformat(end).replace(tzinfo=UTC)
    it = croniter(cron.normalize_cron(cadence), a)
    stepped = 0
    while e > a and it.get_next(datetime) < e:
        stepped += 1
    assert cron.count_firings(cadence, a, e) == stepped


def test_a_short_run_gets_time_for_its_set_up_and_push():
    # 1B, 100 examples, 1 epoch on l4x1: 0.1 x 1 x 0.1 x 1 x 1.2 = 0.012 h = 43.2 s of training.
    est = costs.estimate_run(RunSpec(1, 100, 1, "l4x1"))
    assert est.hours == pytest.approx(0.012)
    assert est.timeout_seconds == 480  # (43.2 s + 300 s) x 1.3 = 446 s, up to whole minutes
    assert costs.estimate_run(RunSpec(1, 100, 1, "l4x1"), timeout_overhead_s=0).timeout_seconds == 60
    assert costs.timeout_rule(est, 1.3) == "(43s training + 5m set-up and push) x 1.3 = 8m"


def test_unsloth_halves_the_cost_but_never_the_timeout():
    plain = costs.estimate_run(RunSpec(3, 1000, 3, "l4x1"))
    fast = costs.estimate_run(RunSpec(3, 1000, 3, "l4x1", unsloth=True))
    assert fast.cost_usd == pytest.approx(plain.cost_usd / 2)
    assert fast.hours == pytest.approx(plain.hours / 2)
    assert fast.timeout_seconds == plain.timeout_seconds == 5460  # (3888 s + 300 s) x 1.3, whole minutes
    assert "without Unsloth" in costs.timeout_rule(fast, 1.3)


@pytest.mark.parametrize("overhead", [-1, float("nan"), float("inf"), 6 * 3600 + 1])
def test_a_timeout_overhead_out_of_range_is_refused(overhead):
    with pytest.raises(inputs.CostInputError, match="timeout overhead must be from 0 to 21600 seconds"):
        costs.estimate_run(RunSpec(1, 100, 1, "l4x1"), timeout_overhead_s=overhead)
