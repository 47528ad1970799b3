"""sft_lora.py's checks before any heavy import, its Hub rules, and its dataset check (the validator's)."""

from __future__ import annotations

import json
import sys
import tomllib

import pytest
from test_validate_dataset import CASES, write_jsonl
from training_helpers import DATA, SFT, VALIDATE, run, script_env

TORCH_IMPORT = "| torch"  # how `-X importtime` names the torch package in its report


def test_missing_hf_token_with_hub_model_id_fails_fast_without_torch(tmp_path):
    args = [
        "--base-model", "tiny-random",
        "--dataset", str(DATA / "acme.jsonl"),
        "--hub-model-id", "acme-corp/acme-adapter",
    ]  # fmt: skip
    env = script_env(tmp_path, HF_TOKEN=None)
    result = run(SFT, args, env, python_flags=("-X", "importtime"))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL hf_token_missing: ")
    assert "HF_TOKEN is not set" in result.last_line
    assert "--secrets HF_TOKEN" in result.last_line
    assert "HF_TOKEN is not set" in result.stderr  # the human-readable copy
    # no model was built or loaded, and torch was never imported
    assert "building offline" not in result.stdout
    assert "loading base model" not in result.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()]
    assert "torch" not in imported
    assert not any(name.startswith(("torch.", "transformers", "trl")) for name in imported)
    # how fast it answers is a benchmark goal: benchmarks/run.py --only scripts (< 1 s)


def test_empty_hf_token_counts_as_missing(tmp_path):
    args = ["--base-model", "x/y", "--dataset", "org/data", "--hub-model-id", "org/a"]
    result = run(SFT, args, script_env(tmp_path, HF_TOKEN="  "))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL hf_token_missing")


def test_no_hub_id_and_no_artifact_folder_refuses(tmp_path):
    args = ["--base-model", "tiny-random", "--dataset", str(DATA / "acme.jsonl")]
    result = run(SFT, args, script_env(tmp_path, CONSOLE_ARTIFACTS_DIR=None))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL no_destination: ")
    assert "would be lost" in result.last_line


def test_trackio_space_needs_a_token(tmp_path):
    args = [
        "--base-model", "tiny-random",
        "--dataset", str(DATA / "acme.jsonl"),
        "--trackio-space-id", "acme-corp/trackio",
    ]  # fmt: skip
    result = run(SFT, args, script_env(tmp_path))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL hf_token_missing")


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        (["--lora-r", "0"], "bad_arguments"),
        (["--no-such-flag"], "bad_arguments"),
        (["--run-name", "bad name/with slash"], "bad_arguments"),
        (["--divergence-factor", "0.5"], "bad_arguments"),
    ],
)
def test_bad_arguments_end_with_a_verdict(tmp_path, extra, code):
    args = ["--base-model", "tiny-random", "--dataset", str(DATA / "acme.jsonl"), *extra]
    result = run(SFT, args, script_env(tmp_path))
    assert result.returncode == 2
    assert result.last_line.startswith(f"VERDICT: FAIL {code}: ")


@pytest.mark.parametrize(
    ("dataset", "needle"),
    [
        ("missing.jsonl", "unreadable: dataset file missing.jsonl not found"),
        (str(DATA / "wayne.jsonl"), "invalid_rows: 10 of 51 rows do not fit sft"),  # no too_long: training truncates
        (str(DATA / "wayne.jsonl"), "; first: line 4: invalid_json: "),
        (str(DATA / "hooli.jsonl"), "method_mismatch: preference rows do not fit sft"),
        (str(DATA / "piedpiper.jsonl"), "method_mismatch: kto rows do not fit sft"),
        (str(DATA), "is a folder"),
        ("not a hub id!", "neither a file nor a Hub id"),
    ],
)
def test_unusable_datasets_are_refused_before_training(tmp_path, dataset, needle):
    args = ["--base-model", "tiny-random", "--dataset", dataset]
    result = run(SFT, args, script_env(tmp_path))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL bad_dataset: ")
    assert needle in result.last_line
    assert "building offline" not in result.stdout


def test_existing_run_folder_is_not_overwritten(tmp_path):
    (tmp_path / "artifacts" / "taken").mkdir(parents=True)
    (tmp_path / "artifacts" / "taken" / "adapter_config.json").write_text("{}")
    args = ["--base-model", "tiny-random", "--dataset", str(DATA / "acme.jsonl")]
    result = run(SFT, [*args, "--run-name", "taken"], script_env(tmp_path))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL run_exists")


@pytest.mark.parametrize("script", [SFT, VALIDATE])
def test_scripts_carry_a_pep723_header(script):
    text = script.read_text()
    block = text.split("# /// script\n", 1)[1].split("# ///\n", 1)[0]
    meta = tomllib.loads("\n".join(line.removeprefix("# ") for line in block.splitlines()))
    assert meta["requires-python"].startswith(">=")
    names = {dep.split(">")[0].split("=")[0].strip() for dep in meta["dependencies"]}
    if script == SFT:
        wanted = {"trl", "peft", "transformers", "datasets", "trackio", "torch", "tokenizers"}
        assert wanted | {"accelerate"} <= names
        assert all(">=" in dep for dep in meta["dependencies"])
    else:
        assert names <= {"datasets"}


# ----------------------------------------------------------------------------- in-process


def make_plan(sft_module, tmp_path, monkeypatch, *extra, hub=True):
    monkeypatch.setenv("CONSOLE_ARTIFACTS_DIR", str(tmp_path / "artifacts"))
    if hub:
        monkeypatch.setenv("HF_TOKEN", "hf_test_not_a_real_token")
    argv = ["--base-model", "tiny-random", "--dataset", str(DATA / "globex.jsonl"), *extra]
    if hub:
        argv += ["--hub-model-id", "acme-corp/globex-adapter"]
    return sft_module.preflight(argv)


def test_preflight_imports_nothing_heavy(sft_module, tmp_path, monkeypatch):
    before = set(sys.modules)
    plan = make_plan(sft_module, tmp_path, monkeypatch)
    heavy = {"torch", "transformers", "trl", "peft", "datasets", "trackio"}
    assert not {m.split(".")[0] for m in set(sys.modules) - before} & heavy
    assert plan.fmt == "prompt_completion"
    assert len(plan.rows) == 250
    assert plan.dest.output_dir == (tmp_path / "artifacts" / plan.run_name).resolve()


def test_hub_runs_push_each_save_and_the_checkpoint_every_tenth_to_their_branch(sft_module, tmp_path, monkeypatch):
    plan = make_plan(sft_module, tmp_path, monkeypatch, "--max-steps", "50")
    kw = sft_module.trainer_settings(plan, set(), bf16=False, fp16=False, cuda=False)
    assert kw["push_to_hub"] is True
    assert kw["hub_model_id"] == "acme-corp/globex-adapter"
    assert kw["hub_strategy"] == "end"  # each save is pushed by jobkit.hub_runs, in one commit
    assert kw["hub_revision"] == f"runs/{plan.run_name}"
    assert kw["save_strategy"] == "steps"
    assert kw["save_steps"] == 0.1
    assert kw["hub_private_repo"] is True
    assert kw["report_to"] == ["trackio"]
    assert kw["run_name"] == plan.run_name
    assert kw["project"] == "console"
    assert kw["logging_nan_inf_filter"] is False
    assert kw["max_steps"] == 50


def test_local_runs_do_not_push(sft_module, tmp_path, monkeypatch):
    plan = make_plan(sft_module, tmp_path, monkeypatch, "--trackio-project", "p", hub=False)
    kw = sft_module.trainer_settings(plan, set(), bf16=False, fp16=False, cuda=False)
    assert kw["push_to_hub"] is False
    assert kw["save_strategy"] == "no"
    assert kw["project"] == "p"
    assert kw["output_dir"] == str(plan.dest.output_dir)


@pytest.mark.parametrize(
    ("rows", "epochs", "batch", "accum", "max_steps", "expected"),
    [
        (300, 3, 8, 1, -1, 114),  # ceil(300/8)=38 per epoch
        (300, 1, 8, 4, -1, 10),  # ceil(38/4)
        (10, 0.5, 4, 1, -1, 2),  # ceil(0.5*3)
        (300, 3, 8, 1, 30, 30),
    ],
)
def test_step_estimate(sft_module, rows, epochs, batch, accum, max_steps, expected):
    args = sft_module.build_parser().parse_args(
        [
            "--base-model", "m", "--dataset", "d",
            "--epochs", str(epochs), "--batch-size", str(batch),
            "--grad-accum", str(accum), "--max-steps", str(max_steps),
        ]
    )  # fmt: skip
    assert sft_module.estimate_steps(rows, args) == expected


def test_hub_dataset_rows_are_normalized(sft_module, tmp_path, monkeypatch):
    """A Hub dataset id: loaded with `datasets` after the checks, extra columns dropped."""
    import datasets

    rows = [
        {"id": i, "messages": [{"role": "user", "content": f"q{i}", "name": "x"},
                               {"role": "assistant", "content": "a"}]}
        for i in range(8)  # the fewest rows a dataset may have (validate_dataset.MIN_ROWS)
    ]  # fmt: skip
    calls = []

    def fake_load(name, split):
        calls.append((name, split))
        return datasets.Dataset.from_list(rows)

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    monkeypatch.setenv("CONSOLE_ARTIFACTS_DIR", str(tmp_path))
    plan = sft_module.preflight(
        ["--base-model", "tiny-random", "--dataset", "acme-corp/support", "--dataset-split", "v2"]
    )
    assert plan.rows is None and plan.steps_total is None  # nothing downloaded in the preflight
    assert plan.run_name.startswith("support-")
    fmt, loaded = sft_module.load_hub_dataset(plan)
    assert calls == [("acme-corp/support", "v2")]
    assert fmt == "messages"
    assert loaded[0] == {"messages": [{"role": "user", "content": "q0"},
                                      {"role": "assistant", "content": "a"}]}  # fmt: skip


def test_validator_reads_hub_datasets_by_row(validator, monkeypatch):
    import datasets

    rows = [{"text": "fine"}, {"text": ""}]
    monkeypatch.setattr(
        datasets, "load_dataset", lambda name, split: datasets.Dataset.from_list(rows)
    )
    report = validator.validate("acme-corp/kb", "sft", None)
    assert report.unit == "row"
    assert [(i.line, i.code) for i in report.issues] == [(2, "empty_content")]


# ----------------------------------------------------------------------------- the dataset check


def test_a_row_the_validator_rejects_is_refused_before_torch(tmp_path, validator):
    """A chat turn with role "bot": the validator's bad_role, in sft_lora's preflight."""
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    bot = {"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "hello"}]}
    path = tmp_path / "bot.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bot) + "\n")
    [issue] = validator.validate(str(path), "sft", None).issues
    assert issue.message == "messages[1].role is 'bot'; use system, user or assistant"

    args = ["--base-model", "tiny-random", "--dataset", str(path)]
    result = run(SFT, args, script_env(tmp_path), python_flags=("-X", "importtime"))
    assert result.returncode == 2
    assert result.last_line == (
        "VERDICT: FAIL bad_dataset: invalid_rows: 1 of 2 rows do not fit sft (bad_role=1); "
        f"first: line 2: bad_role: {issue.message}"
    )
    assert f"line 2: bad_role: {issue.message}" in result.stderr  # the human-readable copy
    assert not any(line.startswith("plan ") for line in result.lines)
    imported = [line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()]
    assert not {"torch", "transformers", "trl", "datasets"} & set(imported)
    # how fast it answers is a benchmark goal: benchmarks/run.py --only scripts (< 1 s)


SFT_CASES = [(rows, code) for rows, method, code in CASES if method == "sft" and code != "too_long"]


@pytest.mark.parametrize(("rows", "code"), SFT_CASES)
def test_the_preflight_refuses_what_the_validator_fails(sft_module, validator, tmp_path, monkeypatch, rows, code):
    """Every malformed sft row of the validator's tests, and the same one-line reason."""
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    report = validator.validate(path, "sft", None)
    assert not report.verdict()[0]
    monkeypatch.setenv("CONSOLE_ARTIFACTS_DIR", str(tmp_path / "artifacts"))
    with pytest.raises(sft_module.Refusal) as refused:
        sft_module.preflight(["--base-model", "tiny-random", "--dataset", path])
    assert refused.value.code == "bad_dataset"
    assert refused.value.message.startswith(report.verdict()[1] + "; first: ")
    assert f": {code}: " in refused.value.message


@pytest.mark.parametrize("name", ["acme", "globex", "initech", "umbrella"])
def test_the_preflight_trains_on_what_the_validator_passes(sft_module, validator, tmp_path, monkeypatch, name):
    report = validator.validate(str(DATA / f"{name}.jsonl"), "sft", None)
    assert report.verdict()[0]
    monkeypatch.setenv("CONSOLE_ARTIFACTS_DIR", str(tmp_path / "artifacts"))
    plan = sft_module.preflight(["--base-model", "tiny-random", "--dataset", str(DATA / f"{name}.jsonl")])
    assert (plan.fmt, len(plan.rows)) == (report.fmt, report.rows)


def test_a_base_model_the_hub_lacks_fails_in_seconds_with_its_own_reason(tmp_path):
    """The recipe's first check asks the Hub (model info) for the base: a missing one is refused
    before the dataset is read, a Hub that does not answer too (not a minute of load retries)."""
    from console.server import LocalServer, ServerOptions

    args = ["--dataset", str(DATA / "acme.jsonl"), "--hub-model-id", "acme-corp/acme-adapter"]
    with LocalServer(ServerOptions(namespace="acme", strict=True, models=("Qwen/Qwen3-0.6B",))) as server:
        env = script_env(tmp_path, HF_HUB_OFFLINE=None, HF_ENDPOINT=server.url, HF_TOKEN=server.token)
        missing = run(SFT, ["--base-model", "Qwen/Qwen3-0.6B-nope", *args], env)
        found = run(SFT, ["--base-model", "Qwen/Qwen3-0.6B", *args, "--dataset", str(tmp_path / "none.jsonl")], env)
    assert missing.returncode == 2
    assert missing.last_line.startswith(
        "VERDICT: FAIL base_model_not_found: --base-model Qwen/Qwen3-0.6B-nope does not exist on the Hub")
    assert found.last_line.startswith("VERDICT: FAIL bad_dataset")  # the base exists: the next check speaks
    assert "base model Qwen/Qwen3-0.6B: found on the Hub" in found.stdout
    # the server is stopped now: the check gives up (a run that retried for minutes would hit the timeout)
    gone = run(SFT, ["--base-model", "Qwen/Qwen3-0.6B", *args], env, timeout=60)
    assert gone.last_line.startswith("VERDICT: FAIL base_model_unreachable: --base-model Qwen/Qwen3-0.6B could not be")
