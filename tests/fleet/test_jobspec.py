"""Submissions: padded timeout, labels, secrets kept apart, the hub script travelling along."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from console import jobspec, paths
from console.costs import RunSpec, estimate_run
from console.jobspec import (
    SubmissionError,
    TrainingRequest,
    build_submission,
    read_request,
    script_args_of,
)

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
    est = estimate_run(RunSpec(3, 1200, 2, "l4x1", max_steps=50), timeout_buffer=1.5)  # 50 steps of 4
    assert sub.timeout_seconds == est.timeout_seconds
    # shipped as a Hub job is: run from the mounted bundle, no path of this machine in the job
    assert sub.command[:3] == ["uv", "run", f"{jobspec.TRAINING_MOUNT}/sft_lora.py"]
    hub = build_submission(dataclasses.replace(REQ, hub_model_id="org/adapter-acme"), backend_kind="hub", token="hf_x")
    assert sub.ships == hub.ships and sub.bundle_id == hub.bundle_id
    assert sub.labels == {
        "app": "console",
        "tenant": "acme",
        "env": "prod",
        "kind": "sft",
        "model_b": "3",
        "examples": "1200",
        "epochs": "2",
        "unsloth": "0",
        "max_steps": "50",  # a calibration reads past runs by their labels: like with like
        "run": sub.labels["run"],
        "timeout": str(sub.timeout_seconds),  # readable when HF echoes no timeout back
    }
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,63}", v) for v in sub.labels.values())
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


def test_hub_submission_ships_the_recipe_and_its_package_and_the_token_as_a_secret():
    hub = dataclasses.replace(REQ, hub_model_id="org/adapter-acme")
    sub = build_submission(hub, backend_kind="hub", token="hf_secret_value")
    assert sub.secrets == {"HF_TOKEN": "hf_secret_value"}
    assert "hf_secret_value" not in repr(sub.command) + repr(sub.env) + sub.describe()
    # run as `hf jobs uv run` runs a shipped script: from the mounted bucket folder
    assert sub.command[:3] == ["uv", "run", f"{jobspec.TRAINING_MOUNT}/sft_lora.py"]
    assert sub.env == {}  # no script in the job's environment
    training = paths.training_dir()
    package = sorted(p.relative_to(training).as_posix() for p in (training / "jobkit").glob("*.py"))
    shipped = dict(sub.ships)
    assert sorted(shipped) == sorted(["sft_lora.py", "validate_dataset.py", *package])
    assert "jobkit/__init__.py" in shipped and "jobkit/run.py" in shipped
    assert all(Path(path) == training / name for name, path in shipped.items())
    # named by content: the same files, the same folder (and fingerprint) at every build
    again = build_submission(hub, backend_kind="hub", token="hf_x")
    assert again.bundle_id == sub.bundle_id and again.fingerprint() == sub.fingerprint()
    assert sub.bundle_id.startswith("console-training-")
    assert "--dataset" in sub.command and "/data/acme.jsonl" in sub.command
    with pytest.raises(SubmissionError, match="not shipped"):
        sub.run_kwargs()  # the bucket upload comes first (console.ship)
    kwargs = sub.mounted("ops/jobs-artifacts").run_kwargs()  # what console.ship returns once uploaded
    assert kwargs["secrets"] == {"HF_TOKEN": "hf_secret_value"}
    [volume] = kwargs["volumes"]
    assert (volume.type, volume.mount_path, volume.path, volume.read_only) == (
        "bucket", jobspec.TRAINING_MOUNT, sub.bundle_id, True)


def test_preflight_runs_the_validator_on_cpu():
    sub = build_submission(dataclasses.replace(REQ, kind="validate"), backend_kind="local")
    assert sub.flavor == "cpu-basic"
    assert sub.command[2].endswith("validate_dataset.py")
    assert sub.command[3:] == ["/data/acme.jsonl", "--method", "sft"]
    assert sub.labels["kind"] == "validate"


def test_label_values_are_cleaned():
    # what HF refuses ('.' included) becomes '-', outer dashes go, and the value stops at 63 characters
    assert jobspec.label_value("a b/c:d") == "a-b-c-d"
    assert jobspec.label_value(" acme_prod.v2 ") == "acme_prod-v2"
    assert jobspec.label_value(0.5) == "0-5"
    long = jobspec.label_value("acme corp/α" * 10)
    assert long == "acme-corp--" * 5 + "acme-cor" and len(long) == 63
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,63}", long)


HF_LABEL = re.compile(r"[A-Za-z0-9_-]{1,100}")  # huggingface_hub 2.4: alphanumerics, '-' and '_'


def test_fractional_numbers_go_in_labels_without_a_dot_and_read_back_in_both_encodings():
    req = dataclasses.replace(REQ, model_b=0.5, epochs=1.5, run_name="acme.v2")
    sub = build_submission(req, backend_kind="local")
    assert sub.labels["model_b"] == "0p5" and sub.labels["epochs"] == "1p5"
    assert sub.labels["run"] == "acme-v2" and sub.mounted("ops/jobs-artifacts").run_kwargs()["name"] == "acme-v2"
    assert sub.command[sub.command.index("--run-name") + 1] == "acme-v2"  # Trackio's run is the label's
    assert all(HF_LABEL.fullmatch(k) and HF_LABEL.fullmatch(v) for k, v in sub.labels.items())

    def job(labels):
        return type("J", (), {"labels": labels, "command": sub.command, "arguments": [],
                              "environment": sub.env, "flavor": sub.flavor, "job_spec": None})()

    back = read_request(job(sub.labels))
    assert (back.model_b, back.epochs) == (0.5, 1.5)
    old = read_request(job({**sub.labels, "model_b": "0.5", "epochs": "1.5"}))  # an older console's labels
    assert (old.model_b, old.epochs) == (0.5, 1.5)
    assert [jobspec.number_label(v) for v in (3, 3.0, 0.5, 13.25, 0.001)] == ["3", "3", "0p5", "13p25", "0p001"]
    assert [jobspec.label_number(t) for t in ("0p5", "0.5", "3", "", None, "x")] == [0.5, 0.5, 3.0, None, None, None]


@pytest.mark.parametrize(("field", "value"), [("tenant", "acme.eu"), ("tenant", "acme eu"), ("env", "prod.eu")])
def test_a_tenant_or_env_hf_would_refuse_is_refused_when_built(field, value):
    with pytest.raises(SubmissionError, match=rf"{field}.*{re.escape(repr(value))} must be letters, digits.*'\.'"):
        build_submission(dataclasses.replace(REQ, **{field: value}), backend_kind="local")


# ---------------------------------------------------------------------------------------------
# The hub command, run for real on the shipped files: `uv run` starts the script from the folder
# the bucket volume mounts (here a copy of the shipped files, at a folder standing for the mount).


def run_hub_command(sub: jobspec.Submission, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """Run a hub submission's command on exactly the files it ships, as its container would
    (`uv run` replaced by this Python, a stand-in on PATH); returns the result and the folder the
    script ran from."""
    bin_dir, mount, cwd = tmp_path / "bin", tmp_path / "mount", tmp_path / "cwd"
    for folder in (bin_dir, mount, cwd):
        folder.mkdir()
    for name, path in sub.ships:
        (mount / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, mount / name)
    uv = bin_dir / "uv"
    uv.write_text(
        "#!/bin/sh\n"
        '[ "$1" = run ] || exit 64\n'
        "shift\n"
        f'echo "$1" > {shlex.quote(str(tmp_path / "script_path"))}\n'
        f'exec {shlex.quote(sys.executable)} "$@"\n'
    )
    uv.chmod(0o755)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "CONSOLE_ARTIFACTS_DIR": str(tmp_path / "artifacts"),
        "HF_HUB_OFFLINE": "1",  # no Hub here: the base model is not asked for (it would load from the cache)
        **sub.env,
        **sub.secrets,  # HF Jobs hands secrets to the container as environment variables
    }
    command = [str(mount) + arg[len(jobspec.TRAINING_MOUNT):] if arg.startswith(jobspec.TRAINING_MOUNT + "/")
               else arg for arg in sub.command]
    proc = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    ran = Path((tmp_path / "script_path").read_text().strip()) if (tmp_path / "script_path").exists() else None
    assert ran is not None, proc.stderr
    return proc, ran.parent


def test_the_shipped_files_run_the_training_script_to_its_preflight(tmp_path):
    """The script imports the shared package from the shipped folder and runs the dataset check
    (a turn with role "bot" is refused) before anything heavy."""
    rows = [
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
        {"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "hello"}]},
    ]
    data = tmp_path / "bot.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    req = dataclasses.replace(REQ, dataset=str(data), hub_model_id="acme-corp/acme-adapter")
    sub = build_submission(req, backend_kind="hub", token="hf_not_a_real_token")
    assert script_args_of(sub.command)[:2] == ["--base-model", "org/base"]
    proc, folder = run_hub_command(sub, tmp_path)
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert last.startswith("VERDICT: FAIL bad_dataset: invalid_rows: 1 of 2 rows do not fit sft (bad_role=1)")
    assert folder == tmp_path / "mount"
    assert (folder / "jobkit" / "__pycache__").is_dir()  # the package was imported from there


def test_the_shipped_files_run_the_dataset_preflight(tmp_path):
    dataset = str(paths.training_dir() / "data" / "acme.jsonl")
    sub = build_submission(dataclasses.replace(REQ, kind="validate", dataset=dataset), backend_kind="hub")
    proc, folder = run_hub_command(sub, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1].startswith("VERDICT: PASS format=messages method=sft rows=300 ")
    assert (folder / "validate_dataset.py").is_file()


@pytest.mark.parametrize(
    ("hub_model_id", "token", "reason"),
    [(None, "hf_x", r"needs a destination \(hub_model_id\)"), ("org/adapter-acme", None, "needs a token to push with")],
)
def test_a_hub_run_with_nowhere_to_push_is_refused_before_anything_is_spent(hub_model_id, token, reason):
    with pytest.raises(SubmissionError, match=reason):
        build_submission(dataclasses.replace(REQ, hub_model_id=hub_model_id), backend_kind="hub", token=token)
    # a local run saves to the artifact store, and a dataset check writes no weights
    assert build_submission(REQ, backend_kind="local").destination.startswith("local artifacts")
    check = build_submission(dataclasses.replace(REQ, kind="validate"), backend_kind="hub", token=None)
    assert check.destination.startswith("none")


def test_a_dataset_another_tenant_trains_on_is_refused():
    owners = jobspec.dataset_owners([dataclasses.replace(REQ, tenant="globex", dataset="/data/globex.jsonl"), REQ])
    stolen = dataclasses.replace(REQ, dataset="/data/globex.jsonl")
    with pytest.raises(SubmissionError, match="dataset /data/globex.jsonl is tenant globex's: acme trains only"):
        build_submission(stolen, backend_kind="local", owners=owners)
    assert build_submission(REQ, backend_kind="local", owners=owners).dataset == "/data/acme.jsonl"


def test_max_steps_count_in_the_estimate_and_the_timeout():
    """The reference's §4 heuristic counts examples x epochs; a run stopped at max_steps sees
    max_steps x batch examples: 600 and 5,000 steps are different runs."""
    from console.scenario import fleet_projection

    runs = {steps: build_submission(dataclasses.replace(REQ, max_steps=steps, timeout_seconds=None))
            for steps in (600, 5000)}
    assert runs[5000].estimate_hours == pytest.approx(runs[600].estimate_hours * 5000 / 600)
    assert runs[5000].timeout_seconds > runs[600].timeout_seconds
    spec = dataclasses.replace(REQ, max_steps=600).run_spec()
    assert spec.examples_seen() == 600 * 4  # the TRL recipes' batch of 4
    assert dataclasses.replace(REQ, kind="embedding", max_steps=600).run_spec().examples_seen() == 600 * 16
    # the fleet projection counts them the same way, to the cent
    assert fleet_projection([(spec, "0 3 * * 1")]) == pytest.approx(
        estimate_run(spec).cost_usd * 4.3, rel=0.05)


def test_a_typed_timeout_below_the_padded_estimate_is_warned_about():
    req = dataclasses.replace(REQ, model_b=7, examples=3000, epochs=3, flavor="a100-large", max_steps=None)
    short = build_submission(dataclasses.replace(req, timeout_seconds=60))
    assert short.timeout_seconds == 60
    assert short.timeout_warning.startswith("timeout 1m is below the padded estimate ")
    assert "likely killed before it finishes" in short.timeout_warning
    assert build_submission(dataclasses.replace(req, timeout_seconds=48 * 3600)).timeout_warning == ""
    assert build_submission(req).timeout_warning == ""


def test_a_dataset_checks_estimate_follows_the_configured_buffer():
    """Its fixed timeout is the padded estimate: unpadded by the buffer the config sets, not by a
    hard-coded 1.3."""
    check = dataclasses.replace(REQ, kind="validate")
    for buffer in (1.3, 2.0):
        sub = build_submission(check, timeout_buffer=buffer)
        assert sub.timeout_seconds == jobspec.PREFLIGHT_TIMEOUT_SECONDS
        assert sub.estimate_hours == pytest.approx(jobspec.PREFLIGHT_TIMEOUT_SECONDS / 3600 / buffer)
