"""Schedules: cron expressions and cadence words checked, counted (runs a month, firings in a
window), listed (next runs) and put in words.

The cost model and the fleet multiply a run's cost by these counts, so they are exact: plain
numeric fields are counted on the calendar day by day; the `L` and `#` forms by stepping
croniter. No UI, no network; cached, since a 10,000-tenant fleet shares a few dozen schedules.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

from console.inputs import CostInputError

# An average Gregorian month, in seconds: 365.2425 days / 12.
MONTH_SECONDS = 365.2425 * 86400 / 12

CADENCE_ALIASES: dict[str, str] = {
    "hourly": "0 * * * *",
    "daily": "0 0 * * *",
    "nightly": "0 0 * * *",
    "weekly": "0 0 * * 0",
    "monthly": "0 0 1 * *",
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}

def normalize_cron(expr: str) -> str:
    """A cadence word (weekly, monthly, daily, @weekly...) or a cron expression, checked."""
    if not isinstance(expr, str) or not expr.strip():
        raise CostInputError("cadence must be a cron expression (e.g. '0 3 * * 1') or weekly / monthly")
    return _normalize_cron(expr)


@lru_cache(maxsize=4096)
def _normalize_cron(expr: str) -> str:
    text = " ".join(expr.split())
    text = CADENCE_ALIASES.get(text.lower(), text)
    fields = text.split(" ")
    if len(fields) != 5:
        raise CostInputError(
            f"cron {expr!r} must have 5 fields (minute hour day-of-month month day-of-week), "
            f"or be weekly / monthly / daily"
        )
    from croniter import croniter

    if not croniter.is_valid(text):
        raise CostInputError(f"cron {expr!r} is not a valid cron expression")
    try:
        croniter(text, datetime(2027, 1, 1, tzinfo=UTC)).get_next(datetime)
    except Exception:  # croniter raises several types for impossible schedules
        raise CostInputError(f"cron {expr!r} never fires") from None
    return text


_WINDOW_START = datetime(2027, 1, 1, tzinfo=UTC)
_WINDOW_DAYS = 4 * 365 + 1


@lru_cache(maxsize=4096)
def runs_per_month(expr: str) -> float:
    """Average runs per month of a cron expression, counted from the expression itself.

    Counts the firings over four years from 2027-01-01 (a whole leap cycle of weekdays is not
    needed for the averages to settle to well under 1%). Plain numeric fields are counted on the
    calendar, day by day (well under a millisecond for any schedule); `L` and `#` forms are
    counted by stepping through the firings.
    """
    text = normalize_cron(expr)
    end = _WINDOW_START + timedelta(days=_WINDOW_DAYS)
    if _calendar_fields(text) is None:
        return _rate_by_stepping(text, _WINDOW_START, end)
    count = count_firings(text, _WINDOW_START - timedelta(microseconds=1), end)
    return count / (_WINDOW_DAYS * 86400) * MONTH_SECONDS


def count_firings(expr: str, after: datetime, end: datetime) -> int:
    """How many times a cron fires after `after` (exclusive) and before `end` (exclusive), UTC.

    The same count as stepping croniter from `after`, but day by day on the calendar: a month's
    remaining runs of a every-15-minutes schedule cost a few dozen steps, not thousands.
    """
    text = normalize_cron(expr)
    after, end = after.astimezone(UTC), end.astimezone(UTC)
    if end <= after:
        return 0
    fields = _calendar_fields(text)
    if fields is None:
        from croniter import croniter

        it = croniter(text, after)
        count = 0
        while it.get_next(datetime) < end:
            count += 1
        return count
    slots, day_matches = fields
    count = 0
    day = after.date()
    last = end.date()
    one = timedelta(days=1)
    while day <= last:
        if day_matches(day):
            if day == after.date() or day == last:
                base = datetime(day.year, day.month, day.day, tzinfo=UTC)
                count += sum(1 for h, m in slots if after < base + timedelta(hours=h, minutes=m) < end)
            else:
                count += len(slots)
        day += one
    return count


@lru_cache(maxsize=4096)
def _calendar_fields(text: str) -> tuple[tuple[tuple[int, int], ...], Callable[[date], bool]] | None:
    """A normalized cron as its (hour, minute) slots and a day test, or None for the `L` and `#`
    forms that only croniter's stepping knows.

    Day matching follows cron (and croniter): when both day-of-month and day-of-week are
    restricted, a day matches if either does.
    """
    from croniter import croniter

    try:
        fields, nth = croniter.expand(text)
    except Exception:
        return None
    if nth or any(not isinstance(v, int) for f in fields for v in f if v != "*"):
        return None
    minutes, hours, doms, months, dows = fields
    mins = range(60) if minutes == ["*"] else sorted(set(minutes))
    hrs = range(24) if hours == ["*"] else sorted(set(hours))
    slots = tuple((h, m) for h in hrs for m in mins)
    dom_any, dow_any = doms == ["*"], dows == ["*"]
    dom_set, month_set = frozenset(doms), frozenset(months)
    dow_set = frozenset(d % 7 for d in dows) if not dow_any else frozenset()
    any_month = months == ["*"]
    either = not (dom_any or dow_any)

    def matches(day: date) -> bool:
        if not any_month and day.month not in month_set:
            return False
        dom_ok = dom_any or day.day in dom_set
        dow_ok = dow_any or (day.isoweekday() % 7) in dow_set
        return (dom_ok or dow_ok) if either else (dom_ok and dow_ok)

    return slots, matches


def _rate_by_stepping(text: str, start: datetime, end: datetime) -> float:
    """The rate from croniter's own firings: over the window, or over the first 5,000 firings."""
    from croniter import croniter

    it = croniter(text, start - timedelta(seconds=1))
    count = 0
    last = start
    while True:
        nxt = it.get_next(datetime)
        if nxt >= end:
            break
        count += 1
        last = nxt
        if count >= 5000:
            span = (last - start).total_seconds() or 1.0
            return count / span * MONTH_SECONDS
    return count / (end - start).total_seconds() * MONTH_SECONDS


def next_runs(expr: str, n: int = 3, after: datetime | None = None) -> list[datetime]:
    text = normalize_cron(expr)
    from croniter import croniter

    it = croniter(text, after or datetime.now(UTC))
    return [it.get_next(datetime) for _ in range(max(0, n))]


@lru_cache(maxsize=4096)
def describe_cron(expr: str) -> str:
    """The schedule in words, e.g. 'At 03:00, only on Monday'."""
    text = normalize_cron(expr)
    try:
        from cron_descriptor import Options, get_description

        opts = Options()
        opts.use_24hour_time_format = True
        return get_description(text, opts)
    except Exception:
        return text


