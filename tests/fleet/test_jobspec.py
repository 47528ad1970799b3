"""Submissions: padded timeout, labels, secrets kept apart, the hub script travelling along."""

from __future__ import annotations

import dataclasses
import re

from console import jobspec, paths
from console.costs import RunSpec, estimate_run
from console.jobspec import TrainingRequest, build_submission, decode_script, read_request

REQ = TrainingRequest(
    tenant="acme",
    dataset="/data/acme.jsonl",
    base_model="org/base",
    model_b=3,
    examples=1200,
    epochs=2,
    flavor="l4x1",
    env="prod",
    max_steps=50,
    learning_rate=5e-3,
    lora_r=8,
)


def test_local_submission():
    sub = build_submission(REQ, backend_kind="local", timeout_buffer=1.5)
    est = estimate_run(RunSpec(3, 1200, 2, "l4x1"), timeout_buffer=1.5)
    assert sub.timeout_seconds == est.timeout_seconds
    assert sub.command[:3] == ["uv", "run", str(paths.training_dir() / "sft_lora.py")]
    assert sub.labels == {
        "app": "console",
        "tenant": "acme",
        "env": "prod",
        "kind": "sft",
        "model_b": "3",
        "examples": "1200",
        "epochs": "2",
        "unsloth": "0",
        "run": sub.labels["run"],
    }
    assert all(re.fullmatch(r"[A-Za-z0-9._-]{1,63}", v) for v in sub.labels.values())
    assert sub.secrets == {}
    back = read_request(
        type(
            "J",
            (),
            {
                "labels": sub.labels,
                "command": sub.command,
                "arguments": [],
                "environment": sub.env,
                "flavor": sub.flavor,
                "job_spec": None,
            },
        )()
    )
    assert (
        back.tenant,
        back.dataset,
        back.base_model,
        back.model_b,
        back.examples,
        back.epochs,
        back.max_steps,
        back.learning_rate,
        back.lora_r,
    ) == ("acme", "/data/acme.jsonl", "org/base", 3.0, 1200, 2.0, 50, 5e-3, 8)


def test_hub_submission_carries_the_script_and_the_token_as_a_secret():
    sub = build_submission(REQ, backend_kind="hub", token="hf_secret_value")
    assert sub.secrets == {"HF_TOKEN": "hf_secret_value"}
    assert "hf_secret_value" not in repr(sub.command) + repr(sub.env) + sub.describe()
    assert sub.command[:2] == ["bash", "-c"]
    script = decode_script(sub.env[jobspec.SCRIPT_ENV])
    assert script == (paths.training_dir() / "sft_lora.py").read_bytes()
    assert "--dataset" in sub.command and "/data/acme.jsonl" in sub.command
    assert sub.run_kwargs()["secrets"] == {"HF_TOKEN": "hf_secret_value"}


def test_preflight_runs_the_validator_on_cpu():
    sub = build_submission(dataclasses.replace(REQ, kind="validate"), backend_kind="local")
    assert sub.flavor == "cpu-basic"
    assert sub.command[2].endswith("validate_dataset.py")
    assert sub.command[3:] == ["/data/acme.jsonl", "--method", "sft"]
    assert sub.labels["kind"] == "validate"


def test_label_values_are_cleaned():
    # what HF refuses becomes '-', outer dashes go, and the value stops at 63 characters
    assert jobspec.label_value("a b/c:d") == "a-b-c-d"
    assert jobspec.label_value(" acme_prod.v2 ") == "acme_prod.v2"
    assert jobspec.label_value(0.5) == "0.5"
    long = jobspec.label_value("acme corp/α" * 10)
    assert long == "acme-corp--" * 5 + "acme-cor" and len(long) == 63
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,63}", long)
