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


def test_a_stalled_loss_raises_one_warning_and_again_once_it_fell_and_stalled_again(run_rules):
    m = run_rules.LossMonitor(stall_patience=3)
    # each step compares the mean of the last 3 losses with the mean of the 3 before them
    assert feed(m, [1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.52, 0.49, 0.51, 0.5]) == []  # falling
    assert feed(m, [0.4995], start=11) == [  # lower, but not by 0.1%
        'ALERT level=WARN kind=stall step=11 title="Loss stalled": '
        "the loss fell only 0.03% in 3 logged steps, under 0.1% (mean 0.5032 over steps 9-11, "
        "0.5033 over steps 6-8)"
    ]
    assert feed(m, [0.5], start=12) == []  # still stalled: said once
    # falls (re-armed), then flat again: a second warning
    assert feed(m, [0.3, 0.3, 0.3, 0.3, 0.3], start=13) == []
    assert feed(m, [0.3], start=18) == [
        'ALERT level=WARN kind=stall step=18 title="Loss stalled": '
        "the loss did not fall in 3 logged steps (mean 0.3000 over steps 16-18, 0.3000 over steps 13-15)"
    ]
    assert [(a.kind, a.level, a.step) for a in m.alerts] == [("stall", "WARN", 11), ("stall", "WARN", 18)]


def test_a_flat_loss_is_stalled_even_with_no_minimum_fall(run_rules):
    m = run_rules.LossMonitor(stall_patience=3, stall_min_delta=0.0)
    assert feed(m, [1.0] * 6) == [
        'ALERT level=WARN kind=stall step=6 title="Loss stalled": '
        "the loss did not fall in 3 logged steps (mean 1.0000 over steps 4-6, 1.0000 over steps 1-3)"
    ]


GLOBEX_DEMO = [  # the demo's globex run (tiny-random, 100 steps at 5e-3), steps 1-98, as logged
    6.6056, 6.4952, 6.4512, 6.4039, 6.3554, 6.2636, 6.2813, 6.1718, 6.1372, 6.0921, 6.1006, 6.0405,
    6.019, 6.0138, 6.0032, 5.9879, 5.9948, 5.9737, 5.9617, 5.9319, 5.9026, 5.958, 5.8976, 5.9119,
    5.8968, 5.9068, 5.8892, 5.8629, 5.8519, 5.8323, 5.8516, 5.8599, 5.8293, 5.8308, 5.824, 5.821,
    5.7962, 5.8036, 5.7859, 5.7812, 5.8017, 5.7737, 5.7539, 5.7796, 5.7633, 5.7621, 5.7567, 5.7588,
    5.7447, 5.736, 5.7245, 5.714, 5.7155, 5.7355, 5.7397, 5.7074, 5.7143, 5.7048, 5.7015, 5.6934,
    5.7147, 5.7222, 5.6945, 5.7022, 5.6934, 5.6866, 5.6747, 5.6597, 5.668, 5.675, 5.6557, 5.6806,
    5.6836, 5.6984, 5.6698, 5.6591, 5.6831, 5.6474, 5.6715, 5.7007, 5.6561, 5.6679, 5.6633, 5.6497,
    5.6845, 5.6712, 5.654, 5.6746, 5.6532, 5.6554, 5.6432, 5.6578, 5.6932, 5.6571, 5.6584, 5.6509,
    5.6568, 5.6437,
]


def test_a_noisy_loss_that_still_falls_is_not_stalled(run_rules):
    """The demo's run falls slowly (0.35% in its last 20 steps) and noisily: its lowest loss of
    step 78 is beaten by under 0.1% twenty steps later, yet it falls, and it is no stall."""
    m = from_command_line(run_rules)
    assert feed(m, GLOBEX_DEMO) == [] and m.alerts == []


def test_a_loss_that_stops_falling_after_a_fall_is_stalled_once_both_windows_are_flat(run_rules):
    m = run_rules.LossMonitor(stall_patience=3)
    assert feed(m, [2.0, 1.5, 1.0, 1.0, 1.0, 1.0, 1.0]) == []  # the window before holds some fall
    assert feed(m, [1.0], start=8) == [
        'ALERT level=WARN kind=stall step=8 title="Loss stalled": '
        "the loss did not fall in 3 logged steps (mean 1.0000 over steps 6-8, 1.0000 over steps 3-5)"
    ]


# ----------------------------------------------------------------------------- the command line


def test_the_stall_thresholds_come_from_the_command_line(run_rules):
    m = from_command_line(run_rules, "--stall-patience", "3", "--stall-min-delta", "0.25")
    # steps 4-6 (mean 0.8000) are 20% below steps 1-3 (1.0000): not the 25% a fall needs
    assert feed(m, [1.0, 1.0, 1.0, 0.8, 0.8, 0.8]) == [
        'ALERT level=WARN kind=stall step=6 title="Loss stalled": '
        "the loss fell only 20.00% in 3 logged steps, under 25.0% (mean 0.8000 over steps 4-6, "
        "1.0000 over steps 1-3)"
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
    assert feed(m, [2.5] * 35, start=6) == [  # steps 21-40 against steps 1-20
        'ALERT level=WARN kind=stall step=40 title="Loss stalled": '
        "the loss did not fall in 20 logged steps (mean 2.5000 over steps 21-40, 2.5000 over steps 1-20)"
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


def test_a_push_that_fails_without_a_message_still_names_the_error(run_rules, tmp_path):
    dest = run_rules.Destination(tmp_path / "out", None, "org/adapter-acme")
    passed, rest = run_rules.finish(Trainer(fail=RuntimeError()), dest, "acme-1", 10, monitor(run_rules, FALLING), {})
    assert not passed
    assert rest == "push_failed: RuntimeError:  run=acme-1 steps=10 first_loss=2.0000 last_loss=0.6000"
