"""The cost ledger on real SQLite with jobs as huggingface_hub parses the Jobs API's JSON."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from jobjson import T0, job, scheduled, tenant_labels

from console.costs import Observation, RunSpec, calibrate, estimate_run
from console.ledger import (
    Ledger,
    entry_from_job,
    observations_from,
    running_seconds_of,
    summarize,
    timed_out,
)
from console.money import month_end, remaining_firings
from console.prices import price_book_from_hardware, shipped_price_book


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    return Ledger(tmp_path / "ledger.sqlite")


def test_two_finished_jobs_make_exactly_two_entries_costed_at_running_seconds_x_price(ledger):
    jobs = [
        job("j1", flavor="l4x1", ran=1800, labels=tenant_labels("acme")),
        job("j2", flavor="a10g-large", ran=600, labels=tenant_labels("globex")),
    ]
    result = ledger.record_finished(jobs)
    assert result.added == 2 and len(ledger) == 2
    e1, e2 = ledger.get("j1"), ledger.get("j2")
    assert e1.running_seconds == 1800 and e1.cost_usd == pytest.approx(1800 / 3600 * 0.80)
    assert e2.running_seconds == 600 and e2.cost_usd == pytest.approx(600 / 3600 * 1.50)
    assert (e1.tenant, e1.kind, e1.env, e1.month) == ("acme", "sft", "prod", "2026-12")
    assert (e1.model_b, e1.examples, e1.epochs, e1.unsloth, e1.run_name) == (3, 1000, 3, False, "acme-run")
    assert e1.price_per_hour == 0.80 and e1.running_source == "durations"


def test_refreshing_again_or_reopening_the_file_adds_nothing(ledger, tmp_path):
    jobs = [job("j1", ran=60), job("j2", ran=120)]
    assert ledger.record_finished(jobs).added == 2
    assert ledger.record_finished(jobs).added == 0
    again = Ledger(tmp_path / "ledger.sqlite")
    assert again.record_finished(jobs).added == 0
    assert again.record([entry_from_job(jobs[0])]) == 0  # even a direct insert cannot double-count
    assert len(again) == 2
    assert sum(e.cost_usd for e in again.entries()) == pytest.approx(180 / 3600 * 0.80)


def test_a_job_is_costed_once_it_ends_not_while_it_runs(ledger):
    running = job("j1", stage="RUNNING", ran=300)
    queued = job("j2", stage="SCHEDULING", ran=None)
    result = ledger.record_finished([running, queued])
    assert result.added == 0 and len(ledger) == 0 and len(result.active) == 2
    assert ledger.record_finished([job("j1", ran=900), queued]).added == 1
    assert ledger.get("j1").running_seconds == 900


def test_timed_out_job_is_counted_as_wasted(ledger):
    out = job("t1", stage="ERROR", ran=2, message="Job timed out after 2s (timeoutSeconds)",
              labels=tenant_labels("acme"))
    failed = job("f1", stage="ERROR", ran=30, message="exit code 1", labels=tenant_labels("acme"))
    assert timed_out(out) and not timed_out(failed)
    ledger.record_finished([out, failed, job("ok", ran=60, labels=tenant_labels("acme"))])
    assert ledger.get("t1").wasted and not ledger.get("f1").wasted and not ledger.get("ok").wasted
    s = summarize(ledger.entries(), now=T0 + timedelta(hours=1))
    assert s.wasted_runs == 1
    assert s.wasted_usd == pytest.approx(60 / 3600 * 0.80)  # 2 s, billed as a whole minute
    assert s.by_tenant[0].wasted_usd == pytest.approx(60 / 3600 * 0.80)  # 2 s, billed as a minute


def test_running_time_from_durations_then_timestamps_then_never_started():
    with_durations = job("a", ran=125)
    assert running_seconds_of(with_durations) == (125.0, "durations")
    from_stamps = job("b", ran=125, durations=False)
    assert from_stamps.durations is None
    assert running_seconds_of(from_stamps) == (125.0, "timestamps")
    cancelled_in_queue = job("c", stage="CANCELED", ran=None, durations=False)
    assert running_seconds_of(cancelled_in_queue) == (0.0, "never-started")
    assert entry_from_job(cancelled_in_queue).cost_usd == 0.0


def test_price_is_the_one_in_effect_when_recorded(ledger):
    class Hw:  # what list_jobs_hardware answers, per minute
        def __init__(self, name, per_minute):
            self.name, self.unit_cost_usd, self.unit_label, self.accelerator = name, per_minute, "minute", None

    live = price_book_from_hardware([Hw("l4x1", 0.02)])  # $1.20/hr
    ledger.record_finished([job("j1", ran=3600)], live)
    ledger.record_finished([job("j1", ran=3600)], shipped_price_book())
    e = ledger.get("j1")
    assert e.price_per_hour == pytest.approx(1.20) and e.cost_usd == pytest.approx(1.20)
    assert e.price_source == "live"


def test_committed_entries_survive_kill_9(tmp_path):
    path = tmp_path / "ledger.sqlite"
    code = (
        "import os, signal, sys\n"
        f"sys.path.insert(0, {str(os.path.dirname(__file__))!r})\n"
        "from jobjson import job\n"
        "from console.ledger import Ledger\n"
        f"led = Ledger({str(path)!r})\n"
        "led.record_finished([job(f'j{i}', ran=60) for i in range(50)])\n"
        "led.record_finished([job(f'k{i}', ran=60) for i in range(25)])\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert len(Ledger(path)) == 75


def test_two_consoles_refreshing_at_once_never_double_count(tmp_path):
    path = tmp_path / "ledger.sqlite"
    jobs = [job(f"j{i}", ran=60 + i) for i in range(200)]
    added: list[int] = []

    def worker():
        added.append(Ledger(path).record_finished(jobs).added)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(added) == 200 and len(Ledger(path)) == 200


def test_summary_by_tenant_month_plan_floor_and_budget():
    nov = datetime(2026, 11, 20, 9, tzinfo=UTC)
    jobs = [
        job("a1", ran=3600, labels=tenant_labels("acme")),                     # $0.80 in Dec
        job("a2", ran=1800, labels=tenant_labels("acme"), created=nov),        # $0.40 in Nov
        job("g1", ran=3600, flavor="a10g-large", labels=tenant_labels("globex")),  # $1.50 in Dec
        job("n1", ran=36, flavor="cpu-basic"),                                 # no labels
    ]
    entries = [entry_from_job(j) for j in jobs]
    now = datetime(2026, 12, 15, tzinfo=UTC)
    s = summarize(entries, now=now, plan="team", seats=3, budget_usd=70.0)
    assert s.month == "2026-12"
    assert s.month_to_date_usd == pytest.approx(0.80 + 1.50 + 60 / 3600 * 0.01)  # 36 s billed as a minute
    assert s.by_month == pytest.approx({"2026-11": 0.40, "2026-12": 0.80 + 1.50 + 60 / 3600 * 0.01})
    tenants = {t.tenant: t for t in s.by_tenant}
    assert tenants["acme"].runs == 2 and tenants["acme"].month_usd == pytest.approx(0.80)
    assert tenants["acme"].total_usd == pytest.approx(1.20)
    assert tenants["(none)"].runs == 1
    assert [t.tenant for t in s.by_tenant][0] == "globex"  # biggest spender this month first
    assert s.plan_floor_usd == 60.0
    assert s.projection_usd == pytest.approx(s.month_to_date_usd + 60.0)
    assert not s.over_budget and s.budget_warning is None
    tight = summarize(entries, now=now, plan="team", seats=3, budget_usd=61.0)
    assert tight.over_budget and "exceeds the monthly budget $61.00" in tight.budget_warning


def test_the_projection_counts_what_running_jobs_have_spent_so_far():
    now = datetime(2026, 12, 15, 12, tzinfo=UTC)
    done = entry_from_job(job("a1", ran=3600, labels=tenant_labels("acme")))  # 1 h x $0.80
    # running for half an hour on an a10g-large ($1.50/h): $0.75 already billed
    live = job("live", stage="RUNNING", flavor="a10g-large", ran=1800, queued=5,
               created=now - timedelta(seconds=1805), labels=tenant_labels("globex"))
    s = summarize([done], now=now, plan="pro", active_jobs=[live])
    assert s.month_to_date_usd == pytest.approx(0.80)
    assert s.in_flight_usd == pytest.approx(0.75)
    assert s.projection_usd == pytest.approx(0.80 + 0.75 + 9.0)  # + the pro plan's $9 floor
    assert summarize([done], now=now, plan="pro").projection_usd == pytest.approx(0.80 + 9.0)


def test_projection_to_month_end_from_the_schedules():
    now = datetime(2026, 12, 15, 12, tzinfo=UTC)  # a Tuesday
    weekly = scheduled("s1", "0 3 * * 1", labels=tenant_labels("acme"))  # Mondays 03:00
    nightly_validate = scheduled(
        "s2", "@daily", flavor="cpu-basic", labels=tenant_labels("acme", kind="validate")
    )
    paused = scheduled("s3", "@hourly", labels=tenant_labels("globex"), suspend=True)
    assert month_end(now) == datetime(2027, 1, 1, tzinfo=UTC)
    assert remaining_firings("0 3 * * 1", now) == 2  # Dec 21 and Dec 28
    assert remaining_firings("@daily", now) == 16  # Dec 16 .. Dec 31
    past_validate = entry_from_job(
        job("v1", flavor="cpu-basic", ran=360, labels=tenant_labels("acme", kind="validate"))
    )
    s = summarize([past_validate], now=now, scheduled_jobs=[weekly, nightly_validate, paused],
                  budget_usd=11.0)
    per_run = estimate_run(RunSpec(3, 1000, 3, "l4x1")).cost_usd  # $0.864
    forecasts = {f.scheduled_job_id: f for f in s.schedules}
    assert set(forecasts) == {"s1", "s2", "s3"}
    assert forecasts["s3"].suspended and forecasts["s3"].remaining_usd == 0.0  # a suspended schedule adds $0
    assert forecasts["s3"].would_be_remaining_usd > 0  # ... and says what it would
    assert forecasts["s1"].remaining_runs == 2 and forecasts["s1"].basis == "heuristic"
    assert forecasts["s1"].remaining_usd == pytest.approx(2 * per_run)
    assert forecasts["s2"].basis == "observed"  # CPU validation: the heuristic has no formula
    assert forecasts["s2"].remaining_usd == pytest.approx(16 * past_validate.cost_usd)
    assert s.projection_usd == pytest.approx(
        past_validate.cost_usd + 2 * per_run + 16 * past_validate.cost_usd + 9.0
    )
    assert not s.over_budget  # $10.75 against $11
    assert summarize([past_validate], now=now, scheduled_jobs=[weekly, nightly_validate],
                     budget_usd=10.0).over_budget


def test_the_projection_is_the_job_specs_run_whatever_the_calibration():
    """Every money surface shows one $/run (`console.money`): the calibration is reported beside it
    (and in the what-if), never folded into one surface's projection alone."""
    now = datetime(2026, 12, 15, 12, tzinfo=UTC)
    predicted = estimate_run(RunSpec(3, 1000, 3, "l4x1")).hours
    history = [
        entry_from_job(job(f"r{i}", ran=predicted * 3600 * 1.5, labels=tenant_labels("acme")))
        for i in range(3)
    ]
    weekly = scheduled("s1", "0 3 * * 1", labels=tenant_labels("acme"))
    s = summarize(history, now=now, scheduled_jobs=[weekly])
    assert s.calibration_runs == 3
    assert s.schedules[0].basis == "heuristic"
    assert s.schedules[0].per_run_usd == pytest.approx(estimate_run(RunSpec(3, 1000, 3, "l4x1")).cost_usd)


def test_calibration_from_ledger_runs_recovers_the_factor_they_were_generated_with(ledger):
    import random

    rng = random.Random(7)
    factor = 1.37
    jobs = []
    for i in range(40):
        spec = RunSpec(rng.choice([1, 3, 7]), rng.choice([500, 1000, 3000]), rng.choice([1, 3]),
                       rng.choice(["l4x1", "a10g-large", "t4-small"]), rng.random() < 0.3)
        seconds = estimate_run(spec).hours * factor * rng.uniform(0.95, 1.05) * 3600
        labels = tenant_labels(f"t{i}", model_b=str(spec.model_b), examples=str(spec.examples),
                               epochs=str(spec.epochs), unsloth="1" if spec.unsloth else "0")
        jobs.append(job(f"c{i}", flavor=spec.flavor, ran=seconds, labels=labels))
    # what must not count: a timeout, a failure, a validation job, and a run without labels
    jobs.append(job("x1", stage="ERROR", ran=10, message="Job timed out after 10s",
                    labels=tenant_labels("t1")))
    jobs.append(job("x2", stage="ERROR", ran=10, message="exit 1", labels=tenant_labels("t1")))
    jobs.append(job("x3", flavor="cpu-basic", ran=10, labels=tenant_labels("t1", kind="validate")))
    jobs.append(job("x4", ran=10))
    ledger.record_finished(jobs)
    cal = ledger.calibration()
    assert cal.runs == 40
    assert cal.overall_factor == pytest.approx(factor, rel=0.02)
    for flavor in ("l4x1", "a10g-large", "t4-small"):
        assert cal.factor_for(flavor) == pytest.approx(factor, rel=0.03)
    # the same numbers as calibrating the observations directly
    obs = observations_from(ledger.entries())
    assert calibrate(obs).overall_factor == pytest.approx(cal.overall_factor)
    assert all(isinstance(o, Observation) for o in obs)


def test_untrusted_labels_and_messages_are_stored_verbatim(ledger):
    evil = "\x1b[31m[bold]pwn[/bold]\x07"
    ledger.record_finished([job("e1", stage="ERROR", ran=5, message=evil, labels={"tenant": "a-b.c"})])
    e = ledger.get("e1")
    assert e.message == evil and e.tenant == "a-b.c"
    assert replace(e, message=None).message is None


def test_a_newer_ledger_file_is_refused_with_a_reason(tmp_path):
    import sqlite3

    from console.ledger import LedgerError

    path = tmp_path / "ledger.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(LedgerError, match="newer console"):
        Ledger(path)


@pytest.mark.parametrize("module", ["console.ledger", "console.commands.ledger", "console.trackio_metrics"])
def test_headless_modules_import_no_ui_and_no_training_stack(module):
    code = f"import sys, {module}; print(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True).stdout.split())
    assert not loaded & {"textual", "trackio", "torch", "transformers", "trl", "peft", "datasets"}


def test_estimates_calibrate_from_hf_runs_when_there_are_any_not_the_local_servers_cpu(ledger):
    from console.ledger import estimate_calibration

    hours = estimate_run(RunSpec(3, 1000, 3, "l4x1")).hours
    local = [job(f"l{i}", ran=hours * 3600 * 150, labels=tenant_labels("acme")) for i in range(3)]
    ledger.record_finished(local)
    cal, basis = estimate_calibration(ledger.entries())
    assert basis == "local" and cal.runs == 3 and cal.overall_factor == pytest.approx(150, rel=1e-3)
    assert ledger.get("l0").local and ledger.get("l0").endpoint == "http://127.0.0.1:1"
    hf = [job(f"h{i}", ran=hours * 3600 * 1.2, labels=tenant_labels("acme"),
              endpoint="https://huggingface.co") for i in range(2)]
    ledger.record_finished(hf)
    cal, basis = estimate_calibration(ledger.entries())
    assert basis == "hf" and cal.runs == 2 and cal.overall_factor == pytest.approx(1.2, rel=1e-3)  # whole seconds
    assert not ledger.get("h0").local
    assert ledger.calibration().runs == 5 and ledger.calibration(local=False).runs == 2


def test_a_refresh_of_many_jobs_adds_only_the_new_ones_and_recosts_the_unknown(tmp_path):
    from tests.ledger.jobjson import job

    from console.ledger import Ledger

    ledger = Ledger(tmp_path / "ledger.sqlite")
    first = [job(f"job{i:04d}") for i in range(0, 1200, 2)]  # 600 known, across the ids asked per query
    blind = [job(f"job{i:04d}", durations=False, ran=None, stage="ERROR") for i in (1101, 1103)]
    assert ledger.record_finished(first + blind).added == 602
    assert sum(1 for e in ledger.entries() if not e.known) == 2
    again = [job(f"job{i:04d}") for i in range(1200)]  # the same 600, 600 new; 1101 and 1103 now timed
    result = ledger.record_finished(again)
    assert result.terminal == 1200
    assert len(ledger) == 1200 and all(e.known for e in ledger.entries())
    assert ledger.record_finished(again).added == 0  # idempotent
