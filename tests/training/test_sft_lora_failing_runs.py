"""Real CPU runs of training/sft_lora.py whose learning rate breaks them: each ends with VERDICT: FAIL
and its named reason, an ERROR alert in the log (`ALERT level=ERROR kind=...`) and the same alert
in the run's Trackio store, and leaves no weights. (A healthy run at 5e-3 passing with no alert is
test_sft_lora_runs.py's first test.)

The offline tiny model's logits are bounded (LoRA does not touch its tied embeddings), so its loss
cannot leave roughly [4, 10] nats: no learning rate takes it to twice its best. A learning rate of
30 makes it fall to its best and climb back to chance level while the grad norm explodes; the
diverging case asks for --divergence-factor 1.005 to call that divergence.
"""

from __future__ import annotations

import json

import pytest
from training_helpers import DATA, SFT, parse_fields, read_trackio, script_env
from training_helpers import run_forked as run

pytestmark = pytest.mark.xdist_group("offline_forkserver")  # one worker imports the training stack once for them


def args(run_name: str, learning_rate: str, max_steps: int, *extra: str) -> list[str]:
    return [
        "--base-model", "tiny-random",
        "--dataset", str(DATA / "acme.jsonl"),
        "--max-steps", str(max_steps),
        "--learning-rate", learning_rate,
        "--lora-r", "8",
        "--lora-alpha", "16",
        "--batch-size", "8",
        "--max-length", "256",
        "--run-name", run_name,
        "--trackio-project", "tenants",
        *extra,
    ]  # fmt: skip


CASES = {
    # lr 1e3: the loss sits at chance (ln 959 = 6.8659) and the grad norm is 0 from step 3
    "dead": (args("acme-dead", "1e3", 12), "zero_grad", "zero_grad", "Run failed: zero gradients"),
    # lr 30: best 6.7560 at step 7, back to 6.86 by step 16, grad norm 0.4 -> 100+
    "diverging": (
        args("acme-diverging", "30", 16, "--divergence-factor", "1.005"),
        "diverged",
        "diverged",
        "Run failed: loss diverged",
    ),
    # lr 1e20: the weights overflow on the first update, the loss is NaN at step 2
    "nan": (args("acme-nan-lr", "1e20", 12), "nan_loss", "nan", "NaN/inf loss"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_learning_rate_that_breaks_the_run_fails_it_with_its_reason_and_an_error_alert(tmp_path, case):
    argv, reason, kind, title = CASES[case]
    run_name = argv[argv.index("--run-name") + 1]
    result = run(SFT, argv, script_env(tmp_path))

    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.last_line.startswith(f"VERDICT: FAIL {reason}: "), result.stdout[-3000:]
    verdict = parse_fields(result.last_line)
    assert verdict["run"] == run_name and "adapter" not in verdict
    errors = [line for line in result.lines if line.startswith("ALERT level=ERROR ")]
    assert len(errors) == 1, result.stdout[-3000:]
    assert errors[0].startswith(f"ALERT level=ERROR kind={kind} ")
    assert f'title="{title}"' in errors[0]

    # the same alert, once, in the run's Trackio store
    store = read_trackio(tmp_path, "tenants", run_name)
    stored = [a for a in store["alerts"] if a["level"] == "error"]
    assert [a["title"] for a in stored] == [title], store["alerts"]
    assert f"[{kind} step=" in stored[0]["text"]

    # no weights from a failed run; its manifest says why
    folder = tmp_path / "artifacts" / run_name
    assert not (folder / "adapter_model.safetensors").exists()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["verdict"] == "FAIL"
    assert manifest["failure"].startswith(f"{reason}: ")
    assert kind in [a["kind"] for a in manifest["alerts"] if a["level"] == "ERROR"]
