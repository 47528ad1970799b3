"""The costs pane's numbers from SQL aggregates equal the fold over every entry: totals by tenant
and month, the month's waste, unknown entries, the calibration, and an unlabelled schedule's
observed cost. The pane summarizes a 100,000-entry ledger without loading its entries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from jobjson import job, scheduled, tenant_labels

from console.ledger import Ledger, estimate_calibration, month_of, summarize
from console.ledger.forecast import spend_totals

NOW = datetime(2026, 12, 15, 12, tzinfo=UTC)


def _jobs() -> list:
    out = []
    for n in range(120):
        created = NOW - timedelta(days=n % 45, hours=n % 7)
        tenant = f"t{n % 9}"
        stage = ("COMPLETED", "COMPLETED", "ERROR", "CANCELED")[n % 4]
        message = "Job timed out after 30m" if stage == "ERROR" and n % 8 == 2 else None
        endpoint = "http://127.0.0.1:1" if n % 5 else "https://huggingface.co"
        out.append(job(
            f"j{n:03d}", stage=stage, created=created, ran=300.0 + 37 * n, message=message,
            flavor=("l4x1", "a10g-small", "t4-small")[n % 3], endpoint=endpoint,
            durations=n % 11 != 0, labels=tenant_labels(tenant, examples=str(200 + 10 * n)),
        ))
    out.append(job("never", stage="ERROR", ran=None, durations=False, labels=tenant_labels("t1")))
    return out


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record_finished(_jobs(), now=NOW)
    return ledger


def test_sql_totals_equal_the_fold_over_every_entry(ledger):
    entries = ledger.entries()
    for month in (month_of(NOW), "2026-11", "2027-01"):
        folded, sql = spend_totals(entries, month), ledger.spend_totals(month)
        assert sql.entries == folded.entries == len(entries)
        assert sql.unknown == folded.unknown
        assert sql.month_to_date == pytest.approx(folded.month_to_date)
        assert sql.wasted == pytest.approx(folded.wasted) and sql.wasted_runs == folded.wasted_runs
        assert sql.by_month == pytest.approx(folded.by_month)
        assert sorted(sql.tenants) == sorted(folded.tenants)
        for tenant, values in folded.tenants.items():
            assert sql.tenants[tenant] == pytest.approx(values)


def test_the_calibration_from_the_store_is_the_one_from_the_entries(ledger):
    assert ledger.calibration_from_store() == estimate_calibration(ledger.entries())


def test_the_costs_pane_and_the_watcher_asking_together_read_the_entries_once(ledger, monkeypatch):
    import threading
    import time

    from console.ledger import store

    fits = []

    def slow_calibrate(observations):  # a 100,000-entry ledger takes seconds: the two asks overlap
        fits.append(threading.current_thread().name)
        time.sleep(0.3)
        return calibrate(observations)

    calibrate = store.calibrate
    monkeypatch.setattr(store, "calibrate", slow_calibrate)
    answers = []
    asks = [threading.Thread(target=lambda: answers.append(ledger.calibration_from_store()), name=name)
            for name in ("costs pane", "watcher")]
    for ask in asks:
        ask.start()
    for ask in asks:
        ask.join()
    assert answers[0] == answers[1] == estimate_calibration(ledger.entries())
    assert len(set(fits)) == 1  # one of them read the entries; the other took its answer


def test_a_summary_from_the_store_equals_the_summary_of_the_entries(ledger):
    unlabelled = scheduled("s-none", "0 3 * * 1", flavor="l4x1",
                           labels={"app": "console", "tenant": "t3", "kind": "sft"})
    labelled = scheduled("s-t4", "0 4 * * *", labels=tenant_labels("t4"))
    kwargs = dict(now=NOW, plan="team", seats=2, budget_usd=50.0, scheduled_jobs=[unlabelled, labelled])
    calibration, _ = estimate_calibration(ledger.entries())
    folded = summarize(ledger.entries(), calibration=calibration, **kwargs)
    stored = summarize((), totals=ledger.spend_totals(month_of(NOW)), history=ledger.history(),
                       calibration=ledger.calibration_from_store()[0], **kwargs)
    assert stored.entries == folded.entries and stored.unknown_jobs == folded.unknown_jobs
    assert stored.projection_usd == pytest.approx(folded.projection_usd)
    assert [(t.tenant, t.runs) for t in stored.by_tenant] == [(t.tenant, t.runs) for t in folded.by_tenant]
    assert [(f.scheduled_job_id, f.basis) for f in stored.schedules] == [
        (f.scheduled_job_id, f.basis) for f in folded.schedules]
    assert {f.basis for f in stored.schedules} == {"observed", "heuristic"}
    assert stored.calibration_spread == folded.calibration_spread
    assert [f.per_run_usd for f in stored.schedules] == pytest.approx([f.per_run_usd for f in folded.schedules])
