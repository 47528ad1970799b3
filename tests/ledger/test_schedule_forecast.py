"""The costs pane's month-end forecast of each scheduled job: how many runs are left this month and
what each will cost, from the job spec (`console.money`: the cost model of the run it describes),
else from what the same schedule or tenant cost before, else unknown."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from console.costs import RunSpec, estimate_run
from console.ledger.entries import LedgerEntry
from console.ledger.forecast import forecast_schedule
from console.money import month_end, remaining_firings
from console.prices import shipped_price_book

PRICES = shipped_price_book()
NOW = datetime(2026, 12, 14, 12, 0, tzinfo=UTC)  # a Monday; Mondays left: 21, 28 -> 2 runs
LABELS = {"app": "console", "tenant": "acme", "kind": "sft", "model_b": "3", "examples": "1000", "epochs": "2"}


def sj(labels=None, *, schedule="0 3 * * 1", flavor="l4x1", suspend=False, id="sj-1"):
    spec = SimpleNamespace(labels=dict(LABELS if labels is None else labels), flavor=flavor)
    return SimpleNamespace(id=id, schedule=schedule, suspend=suspend, job_spec=spec)


def entry(cost, *, tenant="acme", kind="sft", flavor="l4x1", scheduled_job_id=None, running_source="durations"):
    return LedgerEntry(job_id=f"j{cost}", tenant=tenant, kind=kind, env="prod", flavor=flavor, price_per_hour=0.8,
                       price_source="shipped", running_seconds=60, running_source=running_source, cost_usd=cost,
                       stage="COMPLETED", message=None, wasted=False, created_at=None, started_at=None,
                       finished_at=None, month="2026-12", scheduled_job_id=scheduled_job_id)


@pytest.mark.parametrize(("now", "end"), [
    (datetime(2026, 12, 14, 12, tzinfo=UTC), datetime(2027, 1, 1, tzinfo=UTC)),
    (datetime(2026, 1, 31, 23, 59, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)),
    (datetime(2026, 2, 1, 0, 0, tzinfo=UTC), datetime(2026, 3, 1, tzinfo=UTC)),
    # 23:30 on Nov 30 in New York is already December in UTC: months are UTC months
    (datetime(2026, 11, 30, 23, 30, tzinfo=timezone(timedelta(hours=-5))), datetime(2027, 1, 1, tzinfo=UTC)),
])
def test_the_month_ends_at_the_first_instant_of_the_next_utc_month(now, end):
    got = month_end(now)
    assert got == end and got.utcoffset() == timedelta(0)


def test_a_labelled_schedule_is_forecast_by_the_cost_model():
    f = forecast_schedule(sj(), NOW, PRICES)
    per_run = estimate_run(RunSpec(3, 1000, 2, "l4x1"), PRICES).cost_usd
    assert (f.scheduled_job_id, f.tenant, f.kind, f.flavor, f.schedule) == ("sj-1", "acme", "sft", "l4x1", "0 3 * * 1")
    assert f.remaining_runs == 2 == remaining_firings("0 3 * * 1", NOW)
    assert f.per_run_usd == pytest.approx(per_run) and per_run > 0
    assert f.remaining_usd == pytest.approx(2 * per_run)
    assert f.basis == "heuristic"


def test_an_unsloth_run_is_forecast_faster_and_cheaper():
    plain = forecast_schedule(sj(), NOW, PRICES).per_run_usd
    fast = forecast_schedule(sj({**LABELS, "unsloth": "1"}), NOW, PRICES).per_run_usd
    assert fast == pytest.approx(plain / 2)


def test_a_step_capped_run_is_forecast_by_its_steps():
    """max_steps travels in the job spec (its arguments): the forecast reads it, as the fleet row does."""
    command = ["uv", "run", "/console-training/sft_lora.py", "--dataset", "d", "--max-steps", "5000"]
    capped = sj()
    capped.job_spec.command = command
    f = forecast_schedule(capped, NOW, PRICES)
    assert f.per_run_usd == pytest.approx(estimate_run(RunSpec(3, 1000, 2, "l4x1", max_steps=5000), PRICES).cost_usd)
    assert f.per_run_usd > 5 * forecast_schedule(sj(), NOW, PRICES).per_run_usd


def test_a_suspended_schedule_adds_nothing_and_says_what_it_would():
    paused = forecast_schedule(sj(suspend=True), NOW, PRICES)
    running = forecast_schedule(sj(suspend=False), NOW, PRICES)
    assert paused.suspended and paused.remaining_usd == 0.0 and paused.month_usd == 0.0
    assert running.remaining_usd > 0 and paused.would_be_remaining_usd == pytest.approx(running.remaining_usd)
    assert running.month_usd > 0 and paused.would_be_month_usd == pytest.approx(running.month_usd)
    assert running.month_usd == pytest.approx(running.per_run_usd * running.runs_per_month)
    bare = SimpleNamespace(id="sj-2", schedule="0 3 * * 1", job_spec=sj().job_spec)  # no suspend field
    assert not forecast_schedule(bare, NOW, PRICES).suspended


@pytest.mark.parametrize("schedule", ["", None, "every tuesday", "61 3 * * 1"])
def test_a_schedule_that_cannot_be_read_has_no_forecast(schedule):
    assert forecast_schedule(sj(schedule=schedule), NOW, PRICES) is None


@pytest.mark.parametrize("missing", ["model_b", "examples", "epochs"])
def test_without_every_size_label_the_forecast_is_what_this_schedule_cost_before(missing):
    labels = {k: v for k, v in LABELS.items() if k != missing}
    history = [entry(0.10, scheduled_job_id="sj-1"), entry(0.30, scheduled_job_id="sj-1"),
               entry(9.0, running_source="unknown", scheduled_job_id="sj-1")]  # an unknown cost counts not
    f = forecast_schedule(sj(labels), NOW, PRICES, history=history)
    assert f.basis == "observed" and f.per_run_usd == pytest.approx(0.20)
    assert f.remaining_usd == pytest.approx(0.40)


def test_past_runs_of_the_same_tenant_kind_and_flavor_count_too():
    labels = {"tenant": "acme", "kind": "sft"}
    history = [entry(0.50, scheduled_job_id="sj-old"),          # same tenant, kind, flavor: counts
               entry(5.0, tenant="globex", scheduled_job_id="x"),  # another tenant
               entry(5.0, kind="dpo", scheduled_job_id="x"),       # another kind
               entry(5.0, flavor="a100-large", scheduled_job_id="x")]  # another flavor
    f = forecast_schedule(sj(labels), NOW, PRICES, history=history)
    assert f.basis == "observed" and f.per_run_usd == pytest.approx(0.50)


def test_with_no_labels_and_no_past_runs_the_forecast_is_unknown():
    f = forecast_schedule(sj({"tenant": "acme"}), NOW, PRICES)
    assert f.basis == "unknown" and f.per_run_usd == 0.0 and f.remaining_usd == 0.0
    assert f.kind == "" and f.remaining_runs == 2
    assert forecast_schedule(sj({}), NOW, PRICES).tenant != ""  # no tenant label: shown as no tenant


def test_a_past_run_of_this_schedule_and_of_its_tenant_kind_and_flavor_counts_once():
    labels = {"tenant": "acme", "kind": "sft"}
    history = [entry(0.10, scheduled_job_id="sj-1"),     # this schedule, and acme/sft/l4x1 too
               entry(0.40, scheduled_job_id="sj-old"),   # acme/sft/l4x1 only
               entry(0.70, tenant="globex", scheduled_job_id="sj-1")]  # this schedule only
    f = forecast_schedule(sj(labels), NOW, PRICES, history=history)
    assert f.basis == "observed" and f.per_run_usd == pytest.approx((0.10 + 0.40 + 0.70) / 3)


class _CountedHistory:
    """A ledger's history that counts how many times it is read through."""

    def __init__(self, entries):
        self.entries, self.reads = entries, 0

    def __iter__(self):
        self.reads += 1
        return iter(self.entries)


def test_the_month_summary_reads_the_history_once_however_many_schedules_need_it():
    from console.ledger.forecast import summarize

    history = _CountedHistory([entry(0.10 * (i + 1), tenant=f"t{i % 50}", scheduled_job_id=f"sj-{i}")
                               for i in range(200)])
    schedules = [sj({"tenant": f"t{i}", "kind": "sft"}, id=f"sj-{i}") for i in range(50)]
    summary = summarize([], now=NOW, scheduled_jobs=schedules, prices=PRICES, history=history)
    assert history.reads == 1  # not once per schedule: 10,000 schedules x 100,000 entries took minutes
    by_id = {f.scheduled_job_id: f for f in summary.schedules}
    # t0's runs: entries 0, 50, 100, 150 (sj-0 is entry 0 itself)
    assert by_id["sj-0"].basis == "observed"
    assert by_id["sj-0"].per_run_usd == pytest.approx((0.1 + 5.1 + 10.1 + 15.1) / 4)
    labelled = _CountedHistory(history.entries)
    summarize([], now=NOW, scheduled_jobs=[sj()], prices=PRICES, history=labelled)
    assert labelled.reads == 0  # a labelled fleet is forecast by the cost model: the history is never read


@pytest.mark.parametrize("cron", ["0 3 * * 1", "*/15 * * * *", "30 12 14 * *", "0 0 L * *"])
@pytest.mark.parametrize("now", [
    datetime(2026, 12, 14, 12, 30, 0, tzinfo=UTC),          # on a firing of two of them
    datetime(2026, 12, 14, 12, 30, 0, 1, tzinfo=UTC),       # just after it
    datetime(2026, 12, 14, 12, 29, 59, 999999, tzinfo=UTC),  # just before it
    datetime(2026, 12, 14, 12, 45, 30, tzinfo=UTC),
])
def test_remaining_firings_count_from_the_instant_whatever_the_seconds(cron, now):
    from console.cron import count_firings

    assert remaining_firings(cron, now) == count_firings(cron, now, month_end(now))
