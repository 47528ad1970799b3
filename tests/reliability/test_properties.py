"""Property-based tests over the inputs a user or a file can hand the cost model and the cron /
timeout parsers: anything at all is either accepted with a sane answer or refused with
CostInputError — never another exception. (tests/core/test_costs.py has the in-range properties:
positive finite estimates, timeout round trips, cron junk; these add the hostile ranges.)"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from console import costs, cron, inputs
from console.costs import RunSpec
from console.inputs import CostInputError
from console.server.jobs.scheduler import is_valid_schedule, next_run_after

ANY_NUMBER = st.one_of(
    st.integers(), st.integers(min_value=10**18, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
    st.text(max_size=12),
)
FLAVORS = st.one_of(st.sampled_from(["l4x1", "a10g-small", "t4-small", "cpu-basic", "a100-large"]),
                    st.text(max_size=20))


@settings(max_examples=300, deadline=None)
@given(model_b=ANY_NUMBER, examples=ANY_NUMBER, epochs=ANY_NUMBER, flavor=FLAVORS,
       unsloth=st.booleans())
def test_the_cost_model_accepts_sane_values_and_refuses_the_rest_cleanly(
    model_b, examples, epochs, flavor, unsloth
):
    try:
        est = costs.estimate_run(RunSpec(model_b, examples, epochs, flavor, unsloth))
    except CostInputError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert est.hours > 0 and math.isfinite(est.hours) and math.isfinite(est.cost_usd)
    assert est.cost_usd >= 0 and est.timeout_seconds >= 1


@settings(max_examples=200, deadline=None)
@given(st.floats(0.001, 2000), st.integers(1, 100_000_000), st.floats(0.01, 1000),
       st.sampled_from(["l4x1", "a10g-small", "t4-small", "a100-large", "a10g-large"]))
def test_more_work_never_costs_less(model_b, examples, epochs, flavor):
    base = costs.estimate_run(RunSpec(model_b, examples, epochs, flavor, False))
    bigger = costs.estimate_run(RunSpec(model_b, min(examples * 2, 100_000_000), epochs, flavor,
                                        False))
    faster = costs.estimate_run(RunSpec(model_b, examples, epochs, flavor, True))
    assert bigger.cost_usd >= base.cost_usd
    assert faster.cost_usd <= base.cost_usd  # Unsloth only ever saves


@settings(max_examples=400, deadline=None)
@given(ANY_NUMBER)
def test_timeouts_of_any_shape_are_seconds_in_range_or_refused(value):
    try:
        seconds = inputs.parse_timeout(value)
    except CostInputError as exc:
        assert "timeout" in str(exc)
        return
    assert isinstance(seconds, int) and 1 <= seconds <= inputs.MAX_TIMEOUT_SECONDS


CRON_FIELD = st.one_of(st.just("*"), st.integers(-5, 100).map(str),
                       st.from_regex(r"\*/[0-9]{1,3}", fullmatch=True),
                       st.from_regex(r"[0-9]{1,2}-[0-9]{1,2}", fullmatch=True),
                       st.text("0123456789,*/-LW#?abcMONsun", min_size=1, max_size=6))


@settings(max_examples=300, deadline=None)
@given(st.lists(CRON_FIELD, min_size=1, max_size=7).map(" ".join))
def test_the_console_and_its_server_agree_on_what_a_schedule_is(expr):
    try:
        normalized = cron.normalize_cron(expr)
    except CostInputError:
        return  # refused with a message; the server may still be more lenient
    assert is_valid_schedule(normalized), f"the console accepts {expr!r}, the server would not"
    assert next_run_after(normalized, 1_796_205_600.0) > 1_796_205_600.0
    per_month = cron.runs_per_month(normalized)
    assert per_month >= 0 and math.isfinite(per_month)


@pytest.mark.parametrize("expr", ["@hourly", "@daily", "@weekly", "@monthly", "@yearly",
                                  "0 3 * * 1", "*/15 * * * *", "0 0 1 1 *"])
def test_schedules_both_sides_accept(expr):
    assert is_valid_schedule(cron.normalize_cron(expr))
