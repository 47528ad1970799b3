"""Real CPU runs of every recipe beside SFT + LoRA: sentence-transformers (bi-, cross- and sparse
encoders), DPO + LoRA, KTO + LoRA and the builder model's full fine-tune (`sft_lora.py --full`),
each on the offline tiny model and a sample dataset, each checked the way a user would: its metric
going the right way in the log and in Trackio, the files it saved, its manifest and its verdict.
And one broken run per new rule: a held-out metric that does not rise, a full fine-tune whose
weights go NaN, a DPO run that does not learn.

Budget: the runs are short (8-30 steps), and each is a child forked from one process per test
worker that has imported torch and the trainers already (`forkserver.py`: the same run, without
paying ~7 s of imports each time), so the whole file takes about half a minute on two cores.
"""

from __future__ import annotations

import json
import math
import re

import pytest
from training_helpers import DATA, DPO, EMBED, KTO, SFT, parse_fields, read_trackio, script_env
from training_helpers import run_forked as run

pytestmark = pytest.mark.xdist_group("offline_forkserver")  # one worker imports the training stack once for them

PROGRESS = re.compile(r"^progress step=(\d+)/(\d+) loss=(\S+) ")
EVAL = re.compile(r"^eval step=(\d+) (\S+)=(\S+)$")


def common(run_name: str, steps: int, lr: str, *extra: str) -> list[str]:
    return [
        "--base-model", "tiny-random",
        "--max-steps", str(steps),
        "--learning-rate", lr,
        "--run-name", run_name,
        "--trackio-project", "recipes",
        *extra,
    ]  # fmt: skip


def losses_of(store: dict) -> list[float]:
    return [row["train/loss"] for row in store["logs"] if "train/loss" in row]


# ----------------------------------------------------------------------------- embeddings

EMBEDDING_FILES = {
    # what each kind's saved model holds (sentence-transformers' own layout)
    "bi": ("modules.json", "config_sentence_transformers.json", "model.safetensors", "1_Pooling/config.json"),
    "cross": ("config.json", "model.safetensors", "tokenizer.json"),
    "sparse": ("modules.json", "config_sentence_transformers.json", "model.safetensors"),
}
EMBEDDING_RUNS = {
    # kind: (learning rate, steps, the evaluator's primary metric)
    "bi": ("1e-3", 20, "heldout_cosine_ndcg@10"),
    "cross": ("3e-3", 30, "heldout_ndcg@10"),
    "sparse": ("5e-3", 24, "heldout_dot_ndcg@10"),
}


@pytest.mark.parametrize("kind", sorted(EMBEDDING_RUNS))
def test_an_embedding_model_trains_and_its_held_out_metric_rises(tmp_path, kind):
    lr, steps, metric = EMBEDDING_RUNS[kind]
    name = f"stark-{kind}"
    argv = [
        "--kind", kind, "--dataset", str(DATA / "stark.jsonl"), "--eval-fraction", "0.2",
        *common(name, steps, lr),
    ]  # fmt: skip
    result = run(EMBED, argv, script_env(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.last_line.startswith("VERDICT: PASS "), result.last_line
    verdict = parse_fields(result.last_line)
    model = tmp_path / "artifacts" / name
    assert verdict["model"] == str(model)
    assert verdict["metric"] == metric
    first, last = float(verdict["metric_first"]), float(verdict["metric_last"])
    assert last > first + 0.05, (first, last)  # up on the held-out split
    assert float(verdict["last_loss"]) < float(verdict["first_loss"])  # and the loss down

    plan = next(line for line in result.lines if line.startswith("plan "))
    assert f"kind={kind} " in plan and "rows=154 eval_rows=38 " in plan  # 20% of 192 held out
    evals = [m for m in map(EVAL.match, result.lines) if m]
    assert evals[0].group(1) == "0" and evals[-1].group(1) == str(steps)  # before and after
    assert all(m.group(2) == metric for m in evals)

    store = read_trackio(tmp_path, "recipes", name)
    series = [row[f"eval/{metric}"] for row in store["logs"] if f"eval/{metric}" in row]
    assert len(series) == len(evals) and math.isclose(series[0], first, abs_tol=1e-4)
    assert math.isclose(series[-1], last, abs_tol=1e-4) and series[-1] > series[0]
    assert losses_of(store)[-1] < losses_of(store)[0]
    assert store["alerts"] == [] or all(a["level"] != "error" for a in store["alerts"])

    for file in EMBEDDING_FILES[kind]:
        assert (model / file).stat().st_size > 0, file
    manifest = json.loads((model / "manifest.json").read_text())
    assert manifest["kind"] == kind and manifest["verdict"] == "PASS"
    assert manifest["metric"] == metric and manifest["metric_last"] > manifest["metric_first"]
    assert manifest["eval_rows"] == 38


def test_an_embedding_run_whose_metric_does_not_rise_fails_with_its_reason(tmp_path):
    """A learning rate too small to move the model (1e-9; 0 itself fails zero_lr first), so the
    held-out metric cannot rise."""
    argv = ["--kind", "bi", "--dataset", str(DATA / "stark.jsonl"), "--eval-fraction", "0.2",
            *common("stark-still", 8, "1e-9", "--eval-steps", "4")]  # fmt: skip
    result = run(EMBED, argv, script_env(tmp_path))
    assert result.returncode == 1, result.stdout[-3000:]
    assert result.last_line.startswith("VERDICT: FAIL metric_flat: the held-out heldout_cosine_ndcg@10 went from ")
    assert any(line.startswith("ALERT level=ERROR kind=metric_flat ") for line in result.lines)
    folder = tmp_path / "artifacts" / "stark-still"
    assert not (folder / "model.safetensors").exists()  # no weights from a failed run
    assert json.loads((folder / "manifest.json").read_text())["failure"].startswith("metric_flat")
    alerts = read_trackio(tmp_path, "recipes", "stark-still")["alerts"]
    assert [a["title"] for a in alerts] == ["Run failed: the held-out metric did not rise"]


# ----------------------------------------------------------------------------- preferences

PREFERENCE_RUNS = {
    # script, dataset, the loss a run starts at (DPO: ln 2; KTO: 0.5)
    "dpo": (DPO, "hooli.jsonl", math.log(2)),
    "kto": (KTO, "piedpiper.jsonl", 0.5),
}


@pytest.mark.parametrize("method", sorted(PREFERENCE_RUNS))
def test_a_preference_adapter_trains_and_its_loss_falls(tmp_path, method):
    script, dataset, start = PREFERENCE_RUNS[method]
    name = f"{method}-tiny"
    argv = ["--dataset", str(DATA / dataset), "--lora-r", "8", "--batch-size", "8", "--max-length", "128",
            *common(name, 12, "5e-3")]  # fmt: skip
    result = run(script, argv, script_env(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.last_line.startswith("VERDICT: PASS "), result.last_line
    verdict = parse_fields(result.last_line)
    first, last = float(verdict["first_loss"]), float(verdict["last_loss"])
    assert math.isclose(first, start, abs_tol=0.01)  # the policy starts as the reference
    assert last < first * 0.8
    plan = next(line for line in result.lines if line.startswith("plan "))
    assert f"method={method} " in plan and "training=lora_r=8 " in plan

    progress = [m for m in map(PROGRESS.match, result.lines) if m]
    assert [int(m.group(1)) for m in progress] == list(range(1, 13))
    store = read_trackio(tmp_path, "recipes", name)
    assert len(losses_of(store)) == 12 and math.isclose(losses_of(store)[-1], last, abs_tol=1e-4)
    assert store["alerts"] == []

    adapter = tmp_path / "artifacts" / name
    assert verdict["adapter"] == str(adapter)
    assert json.loads((adapter / "adapter_config.json").read_text())["r"] == 8
    assert (adapter / "adapter_model.safetensors").stat().st_size > 0
    assert (adapter / "base_model" / "model.safetensors").exists()
    manifest = json.loads((adapter / "manifest.json").read_text())
    assert manifest["method"] == method and manifest["training"] == "lora" and manifest["verdict"] == "PASS"


def test_a_dpo_run_that_does_not_learn_fails_flat_loss(tmp_path):
    # 1e-9: too small to move the adapter (0 itself fails zero_lr first)
    argv = ["--dataset", str(DATA / "hooli.jsonl"), "--lora-r", "8", "--batch-size", "8", "--max-length", "128",
            *common("dpo-still", 6, "1e-9")]  # fmt: skip
    result = run(DPO, argv, script_env(tmp_path))
    assert result.returncode == 1
    assert result.last_line.startswith("VERDICT: FAIL flat_loss: "), result.last_line
    assert any(line.startswith("ALERT level=ERROR kind=flat_loss ") for line in result.lines)
    assert not (tmp_path / "artifacts" / "dpo-still" / "adapter_model.safetensors").exists()


# ----------------------------------------------------------------------------- the builder model


def test_the_builder_model_trains_in_full_and_saves_a_whole_model(tmp_path):
    argv = ["--dataset", str(DATA / "builder.jsonl"), "--full", "--flavor", "t4-small", "--batch-size", "8",
            "--max-length", "256", *common("builder-full", 12, "1e-3")]  # fmt: skip
    result = run(SFT, argv, script_env(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.last_line.startswith("VERDICT: PASS "), result.last_line
    verdict = parse_fields(result.last_line)
    assert float(verdict["last_loss"]) < float(verdict["first_loss"])
    # the fit against the flavor's GPU was checked before anything was imported
    fit = next(line for line in result.lines if line.startswith("fit: "))
    assert "full fine-tune, float32" in fit and "<= 16 GB per GPU on t4-small" in fit
    assert result.lines.index(fit) < next(i for i, line in enumerate(result.lines) if line.startswith("plan "))
    trainable = next(line for line in result.lines if line.startswith("full fine-tune trainable_params="))
    params = next(line for line in result.lines if line.startswith("model ready params="))
    assert trainable.split("=")[1] == params.split()[2].split("=")[1]  # every weight trains

    model = tmp_path / "artifacts" / "builder-full"
    assert verdict["model"] == str(model)
    assert (model / "model.safetensors").stat().st_size > 0 and (model / "config.json").exists()
    assert not (model / "adapter_config.json").exists() and not (model / "base_model").exists()
    manifest = json.loads((model / "manifest.json").read_text())
    assert manifest["training"] == "full" and manifest["lora_r"] is None
    assert manifest["gpu_memory_estimate"]["method"] == "full"
    store = read_trackio(tmp_path, "recipes", "builder-full")
    assert len(losses_of(store)) == 12 and losses_of(store)[-1] < losses_of(store)[0]


def test_a_full_fine_tune_whose_weights_go_nan_fails_and_saves_nothing(tmp_path):
    argv = ["--dataset", str(DATA / "builder.jsonl"), "--full", "--batch-size", "8", "--max-length", "128",
            "--inject-nan-at-step", "3", *common("builder-nan", 8, "1e-3")]  # fmt: skip
    result = run(SFT, argv, script_env(tmp_path))
    assert result.returncode == 1
    assert "inject-nan: poisoning the trained weights before step 3" in result.stdout
    assert result.last_line.startswith("VERDICT: FAIL nan_loss: loss became NaN/inf at step 3")
    assert not (tmp_path / "artifacts" / "builder-nan" / "model.safetensors").exists()
