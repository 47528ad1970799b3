"""The loss monitor step by step, as a run's log shows it: the `ALERT` lines it prints while
training (divergence and stall, each raised once and re-armed), the thresholds a recipe's command
line sets, the verdict at the edges of its rules, a failed run's ERROR alert, and the VERDICT line
of a run that ends (`finish`)."""

from __future__ import annotations

import argparse
import math

import pytest
from test_verdict_edges import FALLING, Trainer, monitor


def feed(m, losses, start=1):
    """Observe `losses` from step `start` on; the ALERT lines they raised."""
    return [a.line() for step, loss in enumerate(losses, start=start) for a in m.observe(step, loss)]


def from_command_line(run_rules, *argv: str):
    parser = argparse.ArgumentParser()
    run_rules.add_monitor_arguments(parser)
    args = parser.parse_args(list(argv))
    run_rules.check_monitor_arguments(args)
    return run_rules.LossMonitor.from_args(args)


# ----------------------------------------------------------------------------- alerts while training


def test_a_diverging_loss_raises_one_warning_and_again_once_it_came_back_down(run_rules):
    m = run_rules.LossMonitor(stall_patience=99)
    # best 0.5 at step 2, then above 2 x 0.5 and more than half of the fall given back, 3 steps
    assert feed(m, [2.0, 0.5, 1.4, 1.5, 1.6, 1.7]) == [
        'ALERT level=WARN kind=divergence step=5 title="Loss diverging": '
        "loss 1.6000 at step 5 is 3.2x the best 0.5000 (step 2)"
    ]
    assert not m.should_stop  # a warning only, unless --stop-on-divergence
    # back under the threshold (no new best): re-armed, and 3 more steps above it warn again
    assert feed(m, [0.9, 1.5, 1.5, 1.8], start=7) == [
        'ALERT level=WARN kind=divergence step=10 title="Loss diverging": '
        "loss 1.8000 at step 10 is 3.6x the best 0.5000 (step 2)"
    ]
    assert [a.kind for a in m.alerts] == ["divergence", "divergence"]


@pytest.mark.parametrize(
    "losses",
    [
        [3.0, 1.0, 2.0, 2.0, 2.0],  # exactly 2 x the best: not above it
        [10.0, 1.0, 4.0, 4.0, 4.0],  # above 2 x the best, but gave back a third of its fall, not half
        [1.0, 0.0, 0.6, 0.6, 0.6],  # the best is 0: no multiple of it to compare with
    ],
)
def test_a_loss_that_is_not_diverging_raises_no_alert(run_rules, losses):
    m = run_rules.LossMonitor(stall_patience=99)
    assert feed(m, losses) == [] and m.alerts == []


def test_a_stalled_loss_raises_one_warning_and_again_after_a_new_best(run_rules):
    m = run_rules.LossMonitor(stall_patience=3)
    assert feed(m, [1.0, 0.9, 0.95, 0.92, 0.91]) == [
        'ALERT level=WARN kind=stall step=5 title="Loss stalled": '
        "no new best for 3 logged steps (best 0.9000 at step 2, now 0.9100 at step 5)"
    ]
    assert feed(m, [0.93], start=6) == []  # still stalled: said once
    assert feed(m, [0.5, 0.6, 0.55, 0.52], start=7) == [
        'ALERT level=WARN kind=stall step=10 title="Loss stalled": '
        "no new best for 3 logged steps (best 0.5000 at step 7, now 0.5200 at step 10)"
    ]
    assert [(a.kind, a.level, a.step) for a in m.alerts] == [("stall", "WARN", 5), ("stall", "WARN", 10)]


def test_a_loss_equal_to_its_best_is_no_new_best(run_rules):
    m = run_rules.LossMonitor(stall_patience=3, stall_min_delta=0.0)
    assert feed(m, [1.0, 1.0, 1.0, 1.0]) == [
        'ALERT level=WARN kind=stall step=4 title="Loss stalled": '
        "no new best for 3 logged steps (best 1.0000 at step 1, now 1.0000 at step 4)"
    ]


# ----------------------------------------------------------------------------- the command line


def test_the_stall_thresholds_come_from_the_command_line(run_rules):
    m = from_command_line(run_rules, "--stall-patience", "3", "--stall-min-delta", "0.25")
    # 0.8 is 20% below 1.0: not the 25% a new best needs
    assert feed(m, [1.0, 0.8, 0.9, 0.85]) == [
        'ALERT level=WARN kind=stall step=4 title="Loss stalled": '
        "no new best for 3 logged steps (best 1.0000 at step 1, now 0.8500 at step 4)"
    ]


def test_the_divergence_thresholds_come_from_the_command_line(run_rules):
    m = from_command_line(run_rules, "--divergence-factor", "3", "--divergence-patience", "2", "--stop-on-divergence")
    # 2.5 is not above 3 x the best 1.0; 3.5 is, twice
    assert feed(m, [4.0, 1.0, 2.5, 3.5]) == [] and not m.should_stop
    assert feed(m, [3.5], start=5) == [
        'ALERT level=WARN kind=divergence step=5 title="Loss diverging": '
        "loss 3.5000 at step 5 is 3.5x the best 1.0000 (step 2)"
    ]
    assert m.should_stop


def test_the_defaults_of_the_command_line_warn_without_stopping(run_rules):
    m = from_command_line(run_rules)
    assert feed(m, [4.0, 1.0, 2.5, 2.5]) == []
    assert [a.kind for a in m.observe(5, 2.5)] == ["divergence"] and not m.should_stop
    assert feed(m, [2.5] * 17, start=6) == [  # 20 steps after the best (step 2)
        'ALERT level=WARN kind=stall step=22 title="Loss stalled": '
        "no new best for 20 logged steps (best 1.0000 at step 2, now 2.5000 at step 22)"
    ]


def test_the_minimum_loss_drop_comes_from_the_command_line(run_rules):
    m = from_command_line(run_rules, "--min-loss-drop", "0.5")
    feed(m, [1.0, 1.0, 0.9, 0.8, 0.8, 0.7, 0.7, 0.6, 0.6, 0.6])
    assert m.verdict() == (False, "flat_loss: the loss fell 40.0% (mean of the first 2 logged steps 1.0000, best of "
                                  "the last 2 0.6000); a run that learns falls at least 50%")
    default = from_command_line(run_rules)
    feed(default, [1.0, 1.0, 0.9, 0.8, 0.8, 0.7, 0.7, 0.6, 0.6, 0.6])
    assert default.verdict() == (True, "")


# ----------------------------------------------------------------------------- the verdict at its edges


def test_a_loss_back_at_exactly_the_divergence_factor_having_given_back_half_its_fall_passes(run_rules):
    # start 3.0, best 1.0, the last steps' best 2.0: half the fall given back, but not above 2 x 1.0
    assert monitor(run_rules, [3.0, 3.0, 2.0, 1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]).verdict() == (True, "")
    passed, reason = monitor(run_rules, [3.0, 3.0, 2.0, 1.0, 2.1, 2.1, 2.1, 2.1, 2.1, 2.1]).verdict()
    assert not passed and reason.startswith("diverged: the best of the last 2 logged steps 2.1000 is 2.10x")


def test_a_best_loss_of_zero_is_never_a_diverged_run(run_rules):
    assert monitor(run_rules, [2.0, 2.0, 1.0, 0.0, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5]).verdict() == (True, "")


def test_a_loss_of_zero_from_the_first_step_is_not_flat(run_rules):
    assert monitor(run_rules, [0.0] * 10).verdict() == (True, "")


def test_a_zero_minimum_drop_passes_even_a_loss_that_rose(run_rules):
    rising = [1.0, 1.0] + [1.1] * 8
    assert monitor(run_rules, rising, min_loss_drop=0).verdict() == (True, "")
    passed, reason = monitor(run_rules, rising).verdict()
    assert not passed and reason.startswith("flat_loss: the loss rose 10.0% ")


def test_a_loss_that_fell_by_exactly_the_minimum_drop_passes(run_rules):
    losses = [1.0, 1.0] + [0.5] * 8
    assert monitor(run_rules, losses, min_loss_drop=0.5).verdict() == (True, "")
    assert monitor(run_rules, losses, min_loss_drop=0.6).verdict() == (
        False,
        "flat_loss: the loss fell 50.0% (mean of the first 2 logged steps 1.0000, best of the last 2 0.5000); "
        "a run that learns falls at least 60%",
    )


def test_a_metric_evaluated_once_fails_the_run(run_rules):
    m = monitor(run_rules, FALLING)
    m.watch_metric("ndcg")
    m.observe_metric(0, 0.2)
    assert m.verdict() == (False, "no_metric: the held-out ndcg was evaluated 1 time(s); it needs a value before "
                                  "training and one after")


def test_a_flat_metric_names_the_step_of_its_last_evaluation(run_rules):
    m = monitor(run_rules, FALLING)
    m.watch_metric("ndcg")
    for step, value in [(0, 0.5), (5, 0.6), (10, 0.5)]:
        m.observe_metric(step, value)
    assert m.verdict() == (False, "metric_flat: the held-out ndcg went from 0.5000 before training to 0.5000 "
                                  "(step 10); a run that learns raises it by more than 0")


def test_a_flat_loss_within_one_percent_of_chance_level_says_so(run_rules):
    chance = math.log(1000)
    passed, reason = monitor(run_rules, [chance * 1.005] * 10, vocab_size=1000).verdict()
    assert not passed and reason.endswith(f"{chance * 1.005:.4f}, chance level for 1000 tokens); a run that learns "
                                          "falls at least 1%")
    passed, reason = monitor(run_rules, [math.log(2)] * 10, vocab_size=2).verdict()
    assert not passed and ", chance level for 2 tokens)" in reason


# ----------------------------------------------------------------------------- a failed run's alert


def test_a_run_that_logged_no_loss_gets_its_error_alert_at_step_zero(run_rules):
    m = run_rules.LossMonitor()
    [alert] = m.conclude()
    assert alert.line() == (
        'ALERT level=ERROR kind=no_loss step=0 title="Run failed: no loss logged": no training loss was logged')
    assert m.alerts == [alert] and m.conclude() == []


def test_a_failed_run_gets_its_error_alert_at_its_last_logged_step(run_rules):
    m = monitor(run_rules, [1.0] * 12)
    [alert] = m.conclude()
    assert (alert.kind, alert.level, alert.title, alert.step) == (
        "flat_loss", "ERROR", "Run failed: the loss did not fall", 12)
    assert alert.text.startswith("the loss fell 0.0% ")


# ----------------------------------------------------------------------------- the end of a run


def test_the_verdict_line_of_a_watched_metric_reads_in_full(run_rules, tmp_path):
    m = monitor(run_rules, FALLING)
    m.watch_metric("cosine_ndcg@10")
    m.observe_metric(0, 0.07)
    m.observe_metric(10, 0.85)
    passed, rest = run_rules.finish(Trainer(), run_rules.Destination(tmp_path, None, None), "s", 10, m, {})
    assert passed
    assert rest == (f"run=s steps=10 first_loss=2.0000 last_loss=0.6000 metric=cosine_ndcg@10 metric_first=0.0700 "
                    f"metric_last=0.8500 adapter={tmp_path}")


def test_a_push_says_where_it_goes_first(run_rules, tmp_path, capsys):
    dest = run_rules.Destination(tmp_path / "out", None, "org/adapter-acme")
    run_rules.finish(Trainer(), dest, "acme-1", 10, monitor(run_rules, FALLING), {}, artifact="model")
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "pushing model to hf://org/adapter-acme",
        "saved model=hf://org/adapter-acme",
    ]


def test_a_push_that_fails_without_a_message_still_names_the_error(run_rules, tmp_path):
    dest = run_rules.Destination(tmp_path / "out", None, "org/adapter-acme")
    passed, rest = run_rules.finish(Trainer(fail=RuntimeError()), dest, "acme-1", 10, monitor(run_rules, FALLING), {})
    assert not passed
    assert rest == "push_failed: RuntimeError:  run=acme-1 steps=10 first_loss=2.0000 last_loss=0.6000"
