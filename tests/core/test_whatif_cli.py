"""`console whatif` as a user runs it: a subprocess, its output and exit code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def console(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True)


def test_reference_tables_print_and_agree():
    r = console("whatif", "--reference")
    assert r.returncode == 0, r.stderr
    for needle in ("~4.4 h", "~$9.5", "~$0.86", "~$430", "~$500", "Times and costs agree with the document"):
        assert needle in r.stdout
    assert "DIFFERS" not in r.stdout
    # the document puts a 7B LoRA on a10g-large (24 GB); the memory estimate does not hold it there
    assert "All figures agree" not in r.stdout
    assert ("7B LoRA, 3k ex, 3 ep on a10g-large: ~24.8 GB by the memory estimate, over its 24 GB per GPU "
            "(with Unsloth ~10.7 GB fits; l40sx1 is the cheapest flavor that fits without it)") in r.stdout
    data = json.loads(console("whatif", "--reference", "--json").stdout)
    assert data["all_agree"] is True
    assert [row["fits"] for row in data["builder"]] == [True, False, True, True]
    assert all(row["fits"] for row in data["tenant_adapters"])
    assert len(data["memory_disagreements"]) == 1 and "a10g-large" in data["memory_disagreements"][0]
    assert len(data["builder"]) == 4 and len(data["tenant_adapters"]) == 4 and len(data["fleet"]) == 9


def test_json_scenario():
    r = console("whatif", "--json", "--model-b", "3", "--examples", "1000", "--epochs", "3",
                "--flavor", "l4x1", "--tenants", "100", "--cadence", "weekly", "--plan", "team", "--seats", "2")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    for key in ("hours_per_run", "cost_per_run_usd", "timeout_seconds", "runs_per_month", "monthly_usd"):
        assert key in data
    assert data["hours_per_run"] == pytest.approx(1.08)
    assert data["cost_per_run_usd"] == pytest.approx(0.864)
    assert data["timeout_seconds"] == 5460  # (1.08 h + 300 s of set-up and push) x 1.3, whole minutes
    assert data["timeout_overhead_s"] == 300 and data["timeout_buffer"] == 1.3
    assert data["monthly_usd"] == pytest.approx(100 * data["runs_per_month"] * 0.864 + 40)


def test_cron_cadence_and_unsloth():
    weekly = json.loads(console("whatif", "--json", "--cadence", "0 3 * * 1").stdout)
    fast = json.loads(console("whatif", "--json", "--cadence", "0 3 * * 1", "--unsloth").stdout)
    assert fast["hours_per_run"] == pytest.approx(weekly["hours_per_run"] / 2)
    assert weekly["runs_per_month"] == pytest.approx(4.35, abs=0.01)


def test_text_output_says_which_prices_it_uses():
    r = console("whatif", "--tenants", "10")
    assert r.returncode == 0
    assert "shipped prices" in r.stdout and "runs/month" in r.stdout and "timeout" in r.stdout


def test_free_plan_is_reported_as_unable_to_run_jobs():
    r = console("whatif", "--plan", "free")
    assert "cannot run HF Jobs" in r.stderr


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model-b", "-3"], "model_b"),
        (["--tenants", "-1"], "tenants"),
        (["--flavor", "nope"], "unknown flavor"),
        (["--cadence", "every day"], "cron"),
        (["--plan", "gold"], "plan"),
        (["--epochs", "0"], "epochs"),
        (["--flavor", "cpu-basic"], "CPU flavor"),
    ],
)
def test_bad_input_gets_a_clear_message_and_exit_2(args, needle):
    r = console("whatif", *args)
    assert r.returncode == 2
    assert needle in r.stderr and "Traceback" not in r.stderr


def test_a_run_that_fits_only_with_unsloth_is_told_so():
    """70B LoRA on h200: ~169 GB without Unsloth, ~54 GB with it (reference §2: ~60% less VRAM)."""
    r = console("whatif", "--model-b", "70", "--flavor", "h200")
    assert r.returncode == 1
    assert "LoRA of a 70B model needs ~169.4 GB" in r.stderr
    assert "the cheapest flavor that fits: a100x4 (80 GB per GPU, layers split over 4 GPUs" in r.stderr
    assert "or Unsloth (reference §2: ~60% less VRAM" in r.stderr and "~53.7 GB, it fits h200" in r.stderr
    assert r.stderr.rstrip().endswith("try --flavor a100x4 or --unsloth")
    assert console("whatif", "--model-b", "70", "--flavor", "h200", "--unsloth").returncode == 0


def test_max_steps_caps_each_run_as_a_tenants_max_steps_does():
    """3B, 1,000 examples, 3 epochs on l4x1: 600 steps of 4 examples $0.69, 5,000 steps $5.76."""
    base = ["whatif", "--json", "--model-b", "3", "--examples", "1000", "--epochs", "3", "--flavor", "l4x1"]
    costs = {steps: json.loads(console(*base, *(["--max-steps", steps] if steps else [])).stdout)["cost_per_run_usd"]
             for steps in ("600", "5000", "")}
    assert {k: round(v, 2) for k, v in costs.items()} == {"600": 0.69, "5000": 5.76, "": 0.86}
    bad = console(*base, "--max-steps", "0")
    assert bad.returncode == 2 and "--max-steps must be a whole number from 1" in bad.stderr
