"""A job's Trackio run can be found from the job alone, also for runs of a scheduled job."""

from __future__ import annotations

import sys

from console import jobspec, paths


def test_scheduled_runs_name_themselves_after_tenant_and_job_id():
    req = jobspec.TrainingRequest(tenant="acme", dataset="/d/acme.jsonl", scheduled=True, flavor="t4-small")
    sub = jobspec.build_submission(req)
    assert sub.labels["run"] == "acme-scheduled"
    i = sub.command.index("--run-name-prefix")
    assert sub.command[i + 1] == "acme" and "--run-name" not in sub.command
    assert jobspec.trackio_run_name("6b10abc", sub.labels) == "acme-6b10abc"


def test_a_one_off_run_keeps_its_own_name():
    req = jobspec.TrainingRequest(tenant="acme", dataset="/d/acme.jsonl", run_name="acme-try-3", flavor="t4-small")
    sub = jobspec.build_submission(req)
    assert jobspec.trackio_run_name("6b10abc", sub.labels) == "acme-try-3"
    assert jobspec.trackio_run_name("6b10abc", {}) is None


def _script_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("sft_lora_script", paths.training_dir() / "sft_lora.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look themselves up there
    spec.loader.exec_module(module)
    return module


def test_the_script_names_its_run_from_the_prefix_and_job_id(monkeypatch):
    script = _script_module()
    monkeypatch.setenv("JOB_ID", "6b10abc")
    assert script.default_run_name("/d/acme-data.jsonl", "acme") == "acme-6b10abc"
    assert script.default_run_name("/d/acme-data.jsonl") == "acme-data-6b10abc"
    monkeypatch.delenv("JOB_ID")
    assert script.default_run_name("/d/acme-data.jsonl", "acme").startswith("acme-20")
