"""`console ledger` as a user runs it: a subprocess against the embedded Jobs server."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import subprocess
import sys

import pytest
from huggingface_hub import HfApi

from console.server import LocalServer, ServerOptions

NS = "ops"


def console(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=60)


@pytest.fixture
def server(_isolated_dirs):
    with LocalServer(ServerOptions(namespace=NS, port=0, max_running_jobs=4)) as srv:
        config = _isolated_dirs / "config" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f'namespace = "{NS}"\nbackend = "local"\nendpoint = "{srv.url}"\n'
                          'plan = "team"\nseats = 2\nmonthly_budget_usd = 30.0\n')
        yield srv


def test_ledger_refreshes_from_the_backend_then_prints_json_csv_and_text(server):
    api = HfApi(endpoint=server.url, token=server.token)
    labels = {"app": "console", "tenant": "acme", "env": "dev", "kind": "sft", "run": "acme-1"}
    ok = api.run_job(image="python:3.12", command=["python", "-c", "import time; time.sleep(0.3)"],
                     flavor="l4x1", labels=labels, namespace=NS, timeout=60)
    out = api.run_job(image="python:3.12", command=["python", "-c", "import time; time.sleep(30)"],
                      flavor="a10g-large", labels={**labels, "tenant": "globex"}, namespace=NS, timeout=2)
    for j in (ok, out):
        api.wait_for_job(j.id, timeout=30, poll_interval=0.05, namespace=NS)

    r = console("ledger", "--json")
    assert r.returncode == 0, r.stderr
    assert "2 new entries" in r.stderr
    entries = json.loads(r.stdout)
    assert {e["job_id"] for e in entries} == {ok.id, out.id}
    for e in entries:
        for key in ("job_id", "tenant", "flavor", "running_seconds", "cost_usd"):
            assert key in e
        assert e["cost_usd"] == pytest.approx(math.ceil(e["running_seconds"] / 60) * 60 / 3600 * e["price_per_hour"])
    wasted = {e["job_id"]: e["wasted"] for e in entries}
    assert wasted == {ok.id: False, out.id: True}

    again = console("ledger", "--csv")
    assert again.returncode == 0, again.stderr
    assert "0 new entries" in again.stderr
    rows = list(csv.DictReader(io.StringIO(again.stdout)))
    assert {row["job_id"] for row in rows} == {ok.id, out.id}

    text = console("ledger", "--no-refresh")
    assert text.returncode == 0, text.stderr
    assert "Plan floor:   $40.00 (team x 2 seat(s))" in text.stdout
    assert "WARNING: projected" in text.stdout  # the $40 floor alone is over the $30 budget
    assert "timed out: wasted" in text.stdout and "acme" in text.stdout and "globex" in text.stdout

    summary = json.loads(console("ledger", "--no-refresh", "--json", "--summary").stdout)
    assert summary["entries"] == 2 and summary["over_budget"] is True
    assert summary["wasted_runs"] == 1


def test_bad_arguments_get_a_clear_message(server):
    r = console("ledger", "--no-refresh", "--month", "December")
    assert r.returncode == 2 and "--month must look like 2026-12" in r.stderr
    r = console("ledger", "--no-refresh", "--csv", "--summary")
    assert r.returncode == 2 and "--summary goes with the text output or --json" in r.stderr
    r = console("ledger", "--no-refresh", "--tenant", "nobody")
    assert r.returncode == 2 and "unknown tenant 'nobody'" in r.stderr


def test_summary_alone_prints_the_summary_and_an_unknown_tenant_is_an_error(server):
    api = HfApi(endpoint=server.url, token=server.token)
    labels = {"app": "console", "tenant": "acme", "env": "dev", "kind": "sft", "run": "acme-1"}
    job = api.run_job(image="python:3.12", command=["python", "-c", "1"], flavor="l4x1",
                      labels=labels, namespace=NS, timeout=60)
    api.wait_for_job(job.id, timeout=30, poll_interval=0.05, namespace=NS)
    r = console("ledger", "--summary")  # as docs/costs.md shows it: no entry list
    assert r.returncode == 0, r.stderr
    assert "Projection:" in r.stdout and "acme" in r.stdout and job.id not in r.stdout
    listed = console("ledger", "--no-refresh", "--tenant", "acme")
    assert listed.returncode == 0 and job.id in listed.stdout
    typo = console("ledger", "--no-refresh", "--tenant", "acm")
    assert typo.returncode == 2 and "unknown tenant 'acm': the ledger's tenants are acme" in typo.stderr


def test_a_job_without_a_running_time_is_listed_unknown_and_costs_nothing(_isolated_dirs):
    """A server answering as huggingface.co's legacy answers do (finished jobs without `finishedAt`
    and with null `durations`): the ledger does not bill them until now; it says they are unknown."""
    with LocalServer(ServerOptions(namespace=NS, port=0, strict=True)) as srv:
        config = _isolated_dirs / "config" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(f'namespace = "{NS}"\nbackend = "local"\nendpoint = "{srv.url}"\n')
        api = HfApi(endpoint=srv.url, token=srv.token)
        labels = {"app": "console", "tenant": "acme", "env": "dev", "kind": "sft", "run": "acme-1"}
        job = api.run_job(image="python:3.12", command=["python", "-c", "1"], flavor="h200x8",
                          labels=labels, namespace=NS, timeout=60)
        done = api.wait_for_job(job.id, timeout=30, poll_interval=0.05, namespace=NS)
        assert done.started_at is not None and done.finished_at is None and done.durations is None

        text = console("ledger")
        assert text.returncode == 0, text.stderr
        assert "1 new entry" in text.stderr
        assert "spent $0.00" in text.stdout
        assert "Unknown cost: 1 finished job(s) the Jobs API gave no running time for" in text.stdout
        assert job.id in text.stdout
        [line] = [row for row in text.stdout.splitlines() if row.strip().startswith(job.id)]
        assert " ? " in line and "unknown" in line and "COMPLETED" in line

        [entry] = json.loads(console("ledger", "--no-refresh", "--json").stdout)
        assert entry["cost_known"] is False and entry["cost_usd"] is None and entry["running_seconds"] is None
        assert entry["running_source"] == "unknown"
        summary = json.loads(console("ledger", "--no-refresh", "--json", "--summary").stdout)
        assert summary["unknown_runs"] == 1 and summary["unknown_jobs"] == [job.id]
        assert summary["month_to_date_usd"] == 0 and summary["by_tenant"] == []
