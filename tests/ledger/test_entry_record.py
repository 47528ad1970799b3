"""The ledger entry of one finished job, field by field, as `console ledger --json` and the costs
pane read it: who and what (labels), how long it ran and on what evidence, what it cost, whether its
timeout killed it, when (UTC, the month it is billed in) and where it ran."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from console.costs import job_cost
from console.ledger.entries import entry_from_job, is_loopback, label_bool, label_float, timed_out
from console.prices import price_book_from_hardware, shipped_price_book

NOW = datetime(2026, 12, 10, 9, 0, tzinfo=UTC)
T0 = datetime(2026, 11, 30, 23, 50, tzinfo=UTC)
LABELS = {"tenant": "acme", "kind": "sft", "env": "prod", "model_b": "1p5", "examples": "300", "epochs": "3",
          "unsloth": "1", "run": "acme-scheduled"}


def job(stage="COMPLETED", *, labels=None, flavor="l4x1", secs=600, message=None, started=T0, created=None,
        finished="auto", scheduled=None, endpoint="https://huggingface.co"):
    if finished == "auto":
        finished = None if started is None else started + timedelta(seconds=secs or 0)
    initiator = SimpleNamespace(type="scheduled-job", id=scheduled) if scheduled else SimpleNamespace(type="user",
                                                                                                         id="u1")
    return SimpleNamespace(
        id="6a1f0000000000000000aaaa", labels=dict(LABELS if labels is None else labels), flavor=flavor,
        status=SimpleNamespace(stage=stage, message=message), started_at=started, finished_at=finished,
        created_at=created or (started - timedelta(seconds=30) if started else T0),
        durations=SimpleNamespace(running_secs=secs) if secs is not None else None,
        initiator=initiator, endpoint=endpoint)


def test_a_finished_job_is_costed_once_with_everything_it_said():
    e = entry_from_job(job(scheduled="sj-7"), now=NOW)
    assert (e.job_id, e.tenant, e.kind, e.env, e.flavor) == ("6a1f0000000000000000aaaa", "acme", "sft", "prod", "l4x1")
    assert (e.price_per_hour, e.price_source) == (0.80, "shipped")
    assert (e.running_seconds, e.running_source) == (600.0, "durations")
    assert e.cost_usd == pytest.approx(job_cost(600, "l4x1")) and e.cost_usd > 0
    assert (e.stage, e.message, e.wasted) == ("COMPLETED", None, False)
    assert e.started_at == "2026-11-30T23:50:00Z" and e.finished_at == "2026-12-01T00:00:00Z"
    assert e.created_at == "2026-11-30T23:49:30Z"
    assert e.month == "2026-11"  # billed in the month it started
    assert (e.model_b, e.examples, e.epochs, e.unsloth, e.run_name) == (1.5, 300, 3.0, True, "acme-scheduled")
    assert isinstance(e.examples, int)
    assert e.scheduled_job_id == "sj-7" and e.labels == LABELS
    assert e.endpoint == "https://huggingface.co" and not e.local
    assert e.recorded_at == "2026-12-10T09:00:00Z"
    assert e.known


def test_a_job_still_queued_or_running_is_not_in_the_ledger_yet():
    assert entry_from_job(job("RUNNING"), now=NOW) is None
    assert entry_from_job(job("SCHEDULING", started=None), now=NOW) is None
    for stage in ("ERROR", "CANCELED", "DELETED"):
        assert entry_from_job(job(stage), now=NOW).stage == stage


def test_the_live_price_book_prices_the_entry_and_says_so():
    live = price_book_from_hardware([SimpleNamespace(name="l4x1", unit_cost_usd=0.02, unit_label="minute",
                                                     accelerator=None)])
    e = entry_from_job(job(), live, now=NOW)
    assert (e.price_per_hour, e.price_source) == (pytest.approx(1.2), "live")
    assert e.cost_usd == pytest.approx(job_cost(600, "l4x1", live))


def test_an_unknown_flavor_is_kept_at_no_cost_and_named():
    e = entry_from_job(job(flavor="z9-mega"), now=NOW)
    assert (e.flavor, e.price_per_hour, e.price_source, e.cost_usd) == ("z9-mega", 0.0, "unknown flavor", 0.0)
    assert e.running_seconds == 600.0  # still known time
    assert entry_from_job(job(flavor=None), now=NOW).flavor == "cpu-basic"


def test_without_durations_the_timestamps_measure_the_run():
    e = entry_from_job(job(secs=None, started=T0, finished=T0 + timedelta(seconds=90)), now=NOW)
    assert (e.running_seconds, e.running_source) == (90.0, "timestamps")
    naive = entry_from_job(job(secs=None, started=T0.replace(tzinfo=None),
                               finished=(T0 + timedelta(seconds=90)).replace(tzinfo=None)), now=NOW)
    assert naive.running_seconds == 90.0 and naive.started_at == "2026-11-30T23:50:00Z"


def test_a_finished_job_whose_running_time_is_unknown_costs_nothing_and_says_so():
    e = entry_from_job(job(secs=None, started=T0, finished=None), now=NOW)
    assert (e.running_source, e.running_seconds, e.cost_usd) == ("unknown", 0.0, 0.0)
    assert not e.known
    never = entry_from_job(job("CANCELED", secs=None, started=None), now=NOW)
    assert (never.running_source, never.cost_usd) == ("never-started", 0.0)
    assert never.month == "2026-11"  # billed (at nothing) in the month it was created


def test_a_job_killed_on_its_timeout_is_wasted_spend():
    e = entry_from_job(job("ERROR", message="Job timed out after 1800s"), now=NOW)
    assert e.wasted and e.message == "Job timed out after 1800s" and e.cost_usd > 0
    for message in ("timeout", "Time-out reached", "TIMED_OUT"):
        assert timed_out(job("ERROR", message=message))
    assert not timed_out(job("ERROR", message="CUDA out of memory"))
    assert not timed_out(job("ERROR", message=None))
    assert not timed_out(job("COMPLETED", message="finished before its timeout"))


def test_a_job_without_labels_has_no_tenant_and_no_sizes():
    e = entry_from_job(job(labels={}), now=NOW)
    assert (e.tenant, e.kind, e.env, e.run_name) == ("(none)", "", "", None)
    assert (e.model_b, e.examples, e.epochs, e.unsloth) == (None, None, None, None)
    assert e.scheduled_job_id is None


def test_the_month_is_the_utc_month_of_the_start():
    started = datetime(2026, 12, 31, 20, 0, tzinfo=timezone(timedelta(hours=-5)))  # Jan 1st, 01:00 UTC
    assert entry_from_job(job(started=started), now=NOW).month == "2027-01"


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("true", True), (" Yes ", True), ("TRUE", True),
                                                 ("0", False), ("false", False), ("No", False),
                                                 ("maybe", None), ("", None), (None, None)])
def test_a_yes_no_label(value, expected):
    labels = {} if value is None else {"unsloth": value}
    assert label_bool(labels, "unsloth") is expected


@pytest.mark.parametrize(("value", "expected"), [("3", 3.0), ("0p5", 0.5), ("0.5", 0.5), ("0", 0.0),
                                                 ("-1", None), ("inf", None), ("nan", None), ("x", None),
                                                 (None, None)])
def test_a_number_label(value, expected):
    labels = {} if value is None else {"model_b": value}
    assert label_float(labels, "model_b") == expected


@pytest.mark.parametrize(("endpoint", "local"), [("http://127.0.0.1:8765", True), ("http://localhost:1", True),
                                                 ("http://LOCALHOST", True), ("http://[::1]:80", True),
                                                 ("http://127.5.5.5", True), ("https://huggingface.co", False),
                                                 ("http://128.0.0.1", False), ("", False)])
def test_a_job_on_the_embedded_server_is_local(endpoint, local):
    assert is_loopback(endpoint) is local
    assert entry_from_job(job(endpoint=endpoint), now=NOW).local is local


def test_the_shipped_book_is_the_default():
    assert entry_from_job(job(), now=NOW).price_source == shipped_price_book().source
