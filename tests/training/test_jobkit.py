"""The package the training scripts share: standard library only at import time, shipped beside
the scripts, and the loss monitor behind the run's alerts and verdict."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st
from training_helpers import DATA, SFT, TRAINING, VALIDATE, run, script_env


def test_shared_modules_import_only_the_standard_library():
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(TRAINING)!r})\n"
        "before = set(sys.modules)\n"
        "import jobkit, jobkit.run, jobkit.recipe, jobkit.models, jobkit.vram, validate_dataset\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "print(json.dumps(sorted(new - set(sys.stdlib_module_names) - {'jobkit', 'validate_dataset'})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_a_recipe_shipped_without_its_package_still_ends_with_a_verdict(tmp_path):
    alone = tmp_path / SFT.name
    shutil.copy(SFT, alone)
    result = run(alone, ["--base-model", "m", "--dataset", "d"], script_env(tmp_path))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL missing_files: ")
    assert "ship the whole training/ folder" in result.last_line


def test_the_validator_shipped_alone_checks_the_dataset(tmp_path):
    """`hf jobs uv run validate_dataset.py DATA` ships that one file: it holds every check."""
    alone = tmp_path / VALIDATE.name
    shutil.copy(VALIDATE, alone)
    good = run(alone, [str(DATA / "acme.jsonl")], script_env(tmp_path))
    assert (good.returncode, good.last_line) == (0, "VERDICT: PASS format=messages method=sft rows=300 max_tokens~71")
    bad = run(alone, [str(DATA / "acme.jsonl"), "--method", "dpo"], script_env(tmp_path))
    assert bad.returncode == 1 and bad.last_line.startswith("VERDICT: FAIL ")


def test_progress_line(run_rules):
    logs = {"loss": 2.5, "learning_rate": 1e-4, "grad_norm": 0.51234, "epoch": 0.25}
    assert run_rules.progress_line(7, 30, 2.5, logs, 1.26) == (
        "progress step=7/30 loss=2.5000 lr=1.000e-04 grad_norm=0.5123 epoch=0.25 elapsed=1.3s"
    )
    assert run_rules.progress_line(1, 30, math.nan, {}, 0.0) == "progress step=1/30 loss=nan elapsed=0.0s"


# ----------------------------------------------------------------------------- loss monitor


def test_monitor_nan_stops_and_fails(run_rules):
    m = run_rules.LossMonitor()
    assert m.observe(1, 3.0) == []
    alerts = m.observe(2, float("nan"))
    assert [a.kind for a in alerts] == ["nan"]
    assert alerts[0].level == "ERROR"
    assert m.should_stop
    assert m.observe(3, float("inf")) == []  # one alert per run
    passed, reason = m.verdict()
    assert not passed and reason.startswith("nan_loss")


def test_monitor_divergence_needs_patience_and_rearms(run_rules):
    m = run_rules.LossMonitor(divergence_factor=2.0, divergence_patience=2, stall_patience=99)
    for step, loss in enumerate([4.0, 2.0, 1.0, 2.5], start=1):
        assert m.observe(step, loss) == []  # one spike is not divergence
    alerts = m.observe(5, 3.0)
    assert [a.kind for a in alerts] == ["divergence"]
    assert "3.0x the best 1.0000" in alerts[0].text
    assert m.observe(6, 4.0) == []  # already alerted
    assert not m.should_stop
    assert m.verdict()[1].startswith("diverged")
    m.observe(7, 1.1)  # back down re-arms
    m.observe(8, 2.6)
    assert [a.kind for a in m.observe(9, 2.7)] == ["divergence"]


def test_monitor_stop_on_divergence(run_rules):
    m = run_rules.LossMonitor(divergence_patience=1, stop_on_divergence=True)
    m.observe(1, 1.0)
    m.observe(2, 5.0)
    assert m.should_stop


def test_monitor_stall(run_rules):
    m = run_rules.LossMonitor(stall_patience=3, stall_min_delta=0.01)
    kinds = [[a.kind for a in m.observe(i, v)] for i, v in enumerate([2.0, 1.995, 1.99, 2.0, 1.99, 1.995])]
    assert kinds == [[], [], [], [], [], ["stall"]]  # steps 3-5 no lower than steps 0-2
    assert m.observe(6, 2.0) == []  # alerted once per stall
    assert m.observe(7, 1.5) == []  # a fall re-arms
    assert m.verdict() == (True, "")


def test_monitor_a_rising_loss_fails_flat_loss(run_rules):
    m = run_rules.LossMonitor(stall_patience=99)
    for i, v in enumerate([2.0, 2.1, 2.0, 2.2, 2.3]):
        m.observe(i, v)
    passed, reason = m.verdict()
    assert not passed and reason.startswith("flat_loss: the loss rose 15.0% ")
    assert run_rules.LossMonitor().verdict()[1].startswith("no_loss")


class _Trainer:
    """Where a passing run would save its adapter (the run itself is not what is tested here)."""

    def __init__(self) -> None:
        self.saved: list[str] = []

    def save_model(self, path: str) -> None:
        self.saved.append(path)


def test_a_run_whose_loss_did_not_fall_ends_with_a_failing_verdict(run_rules, tmp_path, capsys):
    flat = run_rules.LossMonitor(stall_patience=99)
    for step in range(1, 11):
        flat.observe(step, 2.0)  # the loss never moved
    assert flat.verdict() == (False, "flat_loss: the loss fell 0.0% (mean of the first 2 logged "
                                     "steps 2.0000, best of the last 2 2.0000); a run that learns "
                                     "falls at least 1%")
    dest = run_rules.Destination(tmp_path / "acme-flat", tmp_path, None)
    trainer = _Trainer()
    code = run_rules.run_job(
        lambda: None, lambda _: run_rules.finish(trainer, dest, "acme-flat", 10, flat, {}))
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert code == 1 and last == (
        "VERDICT: FAIL flat_loss: the loss fell 0.0% (mean of the first 2 logged steps 2.0000, "
        "best of the last 2 2.0000); a run that learns falls at least 1% "
        "run=acme-flat steps=10 first_loss=2.0000 last_loss=2.0000")
    assert trainer.saved == []  # a failed run leaves no weights
    # the same run with a loss that fell by more than 1% passes
    fell = run_rules.LossMonitor(stall_patience=99)
    for step in range(1, 11):
        fell.observe(step, 2.0 if step < 10 else 1.97)
    assert fell.verdict() == (True, "")


@given(st.lists(st.floats(min_value=0.01, max_value=20), min_size=1, max_size=60))
def test_monitor_never_reports_divergence_on_a_falling_loss(run_rules, values):
    m = run_rules.LossMonitor(divergence_patience=1)
    for i, v in enumerate(sorted(values, reverse=True)):
        assert all(a.kind != "divergence" for a in m.observe(i, v))
    assert not m.should_stop
    assert m.last_loss == min(values)


@given(
    st.lists(
        st.one_of(st.floats(min_value=0.0, max_value=1e6), st.just(math.nan), st.just(math.inf)),
        max_size=40,
    )
)
def test_monitor_stops_iff_a_nonfinite_loss_was_seen(run_rules, values):
    m = run_rules.LossMonitor()
    for i, v in enumerate(values):
        m.observe(i, v)
    seen = any(not math.isfinite(v) for v in values)
    assert m.should_stop == seen
    assert (m.nan_step is not None) == seen
    assert sum(a.kind == "nan" for a in m.alerts) == int(seen)
