"""The shared rules the new recipes added: embedding rows in the one dataset validator, and the
loss monitor's held-out metric and its divergence rule for losses near zero."""

from __future__ import annotations

import pytest
from test_validate_dataset import write_jsonl
from training_helpers import DATA

TRIPLET = {"anchor": "my plug is offline", "positive": "plug reconnect it", "negative": "plug read the manual"}
SCORED = {"sentence1": "my plug is offline", "sentence2": "plug reconnect it", "score": 0.8}


@pytest.mark.parametrize(
    ("rows", "code", "message"),
    [
        ([TRIPLET, {**TRIPLET, "negative": TRIPLET["positive"]}], "identical_pair",
         "'positive' and 'negative' are the same text: nothing to learn from it"),
        ([TRIPLET, {**TRIPLET, "anchor": ["a", "list"]}], "wrong_type", "'anchor' is list, not a string"),
        ([TRIPLET, {**TRIPLET, "positive": "  "}], "empty_content", "'positive' is empty"),
        ([SCORED, {**SCORED, "score": 1.5}], "bad_score", "'score' is 1.5; use a number from 0 to 1"),
        ([SCORED, {**SCORED, "score": "high"}], "wrong_type", "'score' is str 'high', not a number"),
        ([SCORED, {**SCORED, "score": True}], "wrong_type", "'score' is bool True, not a number"),
        ([{"anchor": "a", "positive": "b"}, {"anchor": "c"}], "missing_key", "no 'positive' (keys: anchor)"),
    ],
)
def test_embedding_rows_are_checked(validator, tmp_path, rows, code, message):
    report = validator.validate(write_jsonl(tmp_path / "d.jsonl", rows), "embedding", None)
    assert [(i.line, i.code) for i in report.issues] == [(2, code)]
    assert report.issues[0].message.startswith(message)
    assert not report.verdict()[0]


@pytest.mark.parametrize(("name", "fmt", "rows"), [("stark", "triplet", 192), ("tyrell", "scored_pair", 160)])
def test_embedding_samples_pass_and_train_on_their_fields(validator, name, fmt, rows):
    report = validator.validate(str(DATA / f"{name}.jsonl"), "embedding", 256)
    assert report.verdict()[0] and report.fmt == fmt and report.rows == rows
    keys = {"triplet": {"anchor", "positive", "negative"}, "scored_pair": {"sentence1", "sentence2", "score"}}
    assert set(validator.training_rows(report)[0]) == keys[fmt]
    # and what fits embeddings fits nothing else
    assert validator.validate(str(DATA / f"{name}.jsonl"), "sft", None).verdict()[1].startswith(
        f"method_mismatch: {fmt} rows do not fit sft (which needs messages / text / prompt_completion); "
        "this data fits embedding"
    )


def test_a_watched_metric_must_rise(run_rules):
    m = run_rules.LossMonitor(stall_patience=99)
    m.watch_metric("heldout_ndcg@10", min_gain=0.01)
    for step, loss in enumerate([3.0, 2.0, 1.0, 0.8, 0.6], start=1):
        m.observe(step, loss)
    assert m.verdict()[1].startswith("no_metric: the held-out heldout_ndcg@10 was evaluated 0 time(s)")
    m.observe_metric(0, 0.40)
    m.observe_metric(5, 0.405)  # the loss fell, the held-out metric did not follow
    passed, reason = m.verdict()
    assert not passed and reason == (
        "metric_flat: the held-out heldout_ndcg@10 went from 0.4000 before training to 0.4050 (step 5); "
        "a run that learns raises it by more than 0.01"
    )
    [alert] = m.conclude()
    assert (alert.kind, alert.level) == ("metric_flat", "ERROR")
    assert alert.title == "Run failed: the held-out metric did not rise"
    m.observe_metric(6, 0.7)
    assert m.verdict() == (True, "")
    assert m.record()["metrics"] == [[0, 0.40], [5, 0.405], [6, 0.7]]


def test_a_loss_near_zero_that_wobbles_has_not_diverged(run_rules):
    """A contrastive loss falls from ~3.4 to ~0.06 and wobbles at 0.1-0.2: 3x its best, but a few
    percent of what it gained. A loss that gives back half of its fall has diverged."""
    wobbly = run_rules.LossMonitor(stall_patience=99)
    series = [3.45, 3.0, 2.1, 1.2, 0.6, 0.3, 0.2, 0.06, 0.15, 0.18, 0.12, 0.175]
    alerts = [a for step, loss in enumerate(series, start=1) for a in wobbly.observe(step, loss)]
    assert alerts == [] and wobbly.verdict() == (True, "")

    back_up = run_rules.LossMonitor(stall_patience=99)
    series = [3.45, 3.0, 2.1, 1.2, 0.6, 0.3, 0.2, 0.06, 1.5, 2.2, 2.4, 2.6]
    kinds = [a.kind for step, loss in enumerate(series, start=1) for a in back_up.observe(step, loss)]
    assert kinds == ["divergence"]
    assert back_up.verdict()[1].startswith("diverged: the best of the last 2 logged steps 2.4000 is 40.00x")
