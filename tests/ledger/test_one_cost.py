"""One cost for a job, wherever it shows: the jobs table, the ledger, the month's money in flight and
`console ledger` all bill a job's running time the same way, per `billing.granularity`."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta

import pytest
from jobjson import T0, job, tenant_labels

from console.config import Config, load, price_book, save
from console.costs import billed_seconds, job_cost
from console.jobs import job_row
from console.ledger import Ledger, entry_from_job, summarize
from console.prices import shipped_price_book

T4 = 0.40  # t4-small $/h, reference §3


@pytest.mark.parametrize(
    ("granularity", "expected"),
    [("minute", 60 / 3600 * T4), ("second", 13 / 3600 * T4)],
)
def test_a_13_second_job_costs_the_same_in_the_jobs_table_and_the_ledger(granularity, expected):
    prices = shipped_price_book(granularity)
    done = job("short", flavor="t4-small", ran=13, labels=tenant_labels("acme"))
    assert job_row(done, now=T0 + timedelta(hours=1), prices=prices).cost_usd == pytest.approx(expected)
    assert entry_from_job(done, prices).cost_usd == pytest.approx(expected)
    assert job_cost(13, "t4-small", prices) == pytest.approx(expected)


def test_money_in_flight_is_billed_like_a_finished_job():
    prices = shipped_price_book()
    running = job("live", flavor="t4-small", stage="RUNNING", ran=61, durations=False, labels=tenant_labels("acme"))
    now = T0 + timedelta(seconds=5 + 61)  # started at T0 + 5 s (queued), running 61 s
    running_row = job_row(running, now=now, prices=prices)
    summary = summarize([], now=now, active_jobs=[running], prices=prices)
    assert running_row.cost_usd == pytest.approx(summary.in_flight_usd) == pytest.approx(120 / 3600 * T4)


@pytest.mark.parametrize(
    ("seconds", "minute", "second"),
    [(0, 0, 0), (0.4, 60, 0.4), (60, 60, 60), (60.5, 120, 60.5), (1080.0000000000002, 1080, 1080.0000000000002)],
)
def test_billed_seconds_round_up_to_whole_minutes_unless_billed_by_the_second(seconds, minute, second):
    assert billed_seconds(seconds, "minute") == minute
    assert billed_seconds(seconds, "second") == second


def test_the_config_picks_the_granularity_and_console_ledger_follows_it(tmp_path):
    cfg = Config(namespace="acme-org")
    cfg.billing.granularity = "second"
    save(cfg)
    assert price_book(load()).granularity == "second"
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.record_finished([job("short", flavor="t4-small", ran=13, labels=tenant_labels("acme"))],
                   price_book(load()))
    out = subprocess.run([sys.executable, "-m", "console", "ledger", "--no-refresh", "--json",
                          "--ledger", str(ledger.path)], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)[0]["cost_usd"] == pytest.approx(13 / 3600 * T4)
    refused = subprocess.run([sys.executable, "-m", "console", "config", "set", "billing.granularity", "hour"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "billing.granularity" in refused.stderr
