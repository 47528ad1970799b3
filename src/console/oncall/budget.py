"""A budget that acts (`budget_action = "suspend"`): when the month's projection passes
`monthly_budget_usd`, the on-call watcher suspends schedules, the most expensive this month first,
until the projection fits; says once what it suspended and why; and `console budget undo` (or `U`
on the Costs tab) resumes them.

What a schedule adds this month is its remaining firings x $/run (`console.money`), so
suspending it takes exactly that off the projection. Money already spent, runs in flight and the
plan's floor stay: when they alone pass the budget, every schedule is suspended and the cut says
the month still does not fit. An undo holds the action off for that month and budget: an engineer
who resumes chose to spend, and the watcher warns from then on instead of suspending again.

The cut is kept in the on-call store (one per data dir), so the undo works from any console and
after a restart. Standard library and the on-call store only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from console.oncall.store import OnCallStore

ACTIONS = ("warn", "suspend")
"""What passing `monthly_budget_usd` does: warn (an event), or suspend schedules until it fits."""
_CUT = "budget_cut"
_UNDONE = "budget_undone"


@dataclass(frozen=True)
class Suspended:
    scheduled_job_id: str
    tenant: str
    remaining_usd: float
    """What it would have added to the month from the cut on."""


@dataclass(frozen=True)
class BudgetCut:
    """Schedules suspended for a month's budget."""

    month: str
    budget_usd: float
    projection_usd: float
    """The month's projection before the cut."""
    schedules: tuple[Suspended, ...] = field(default_factory=tuple)
    at: float = 0.0

    @property
    def after_usd(self) -> float:
        return self.projection_usd - sum(s.remaining_usd for s in self.schedules)

    @property
    def fits(self) -> bool:
        return self.after_usd <= self.budget_usd + 1e-9

    def line(self) -> str:
        names = ", ".join(f"{s.tenant} (${s.remaining_usd:,.2f})" for s in self.schedules)
        n = len(self.schedules)
        fit = (f"now ${self.after_usd:,.2f}" if self.fits
               else f"still ${self.after_usd:,.2f} with every schedule suspended: spent and running money alone "
                    "passes it")
        return (f"suspended {n} schedule{'s' if n != 1 else ''}, the most expensive this month first: {names}; "
                f"{self.month} was projected ${self.projection_usd:,.2f} over the ${self.budget_usd:,.2f} budget, "
                f"{fit}. Undo: console budget undo (or U on the Costs tab)")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> BudgetCut:
        d = json.loads(text)
        return cls(d["month"], float(d["budget_usd"]), float(d["projection_usd"]),
                   tuple(Suspended(**s) for s in d["schedules"]), float(d.get("at") or 0.0))


def plan_cut(summary: Any, *, at: float = 0.0) -> BudgetCut | None:
    """The schedules to suspend so that `summary`'s projection fits its budget, the most expensive
    this month first (None: it fits, there is no budget, or no running schedule adds anything)."""
    budget = getattr(summary, "budget_usd", None)
    if budget is None or summary.projection_usd <= budget:
        return None
    running = sorted((f for f in summary.schedules if not f.suspended and f.remaining_usd > 0),
                     key=lambda f: (-f.remaining_usd, f.tenant, f.scheduled_job_id))
    chosen: list[Suspended] = []
    left = summary.projection_usd
    for f in running:
        if left <= budget:
            break
        chosen.append(Suspended(f.scheduled_job_id, f.tenant, f.remaining_usd))
        left -= f.remaining_usd
    if not chosen:
        return None
    return BudgetCut(summary.month, budget, summary.projection_usd, tuple(chosen), at)


def held_off(store: OnCallStore, month: str, budget_usd: float) -> bool:
    """An undo holds the action off for this month and budget."""
    return store.meta(_UNDONE) == f"{month}:{budget_usd:.2f}"


def last_cut(store: OnCallStore) -> BudgetCut | None:
    """The schedules the budget suspended and nobody resumed through undo yet."""
    text = store.meta(_CUT)
    return BudgetCut.from_json(text) if text else None


def remember_cut(store: OnCallStore, cut: BudgetCut) -> None:
    """Keep `cut` (merged with a cut of the same month not undone yet: the undo resumes both)."""
    earlier = last_cut(store)
    if earlier is not None and earlier.month == cut.month:
        kept = {s.scheduled_job_id for s in cut.schedules}
        cut = BudgetCut(cut.month, cut.budget_usd, earlier.projection_usd,
                        tuple(s for s in earlier.schedules if s.scheduled_job_id not in kept) + cut.schedules,
                        cut.at)
    store.set_meta(_CUT, cut.to_json())


def forget_cut(store: OnCallStore, cut: BudgetCut) -> None:
    """The cut was undone: forget it and hold the action off for its month and budget."""
    store.set_meta(_UNDONE, f"{cut.month}:{cut.budget_usd:.2f}")
    store.set_meta(_CUT, "")


def act(api: Any, store: OnCallStore, summary: Any, *, namespace: str | None, now: float,
        read_only: bool = False) -> tuple[list[Any], list[str]]:
    """Suspend what `plan_cut` says, keep the cut for the undo and return (the event saying so,
    problems). Nothing when the projection fits, when an undo holds the action off for this month
    and budget, or in read-only mode (the plain over-budget warning still goes)."""
    from console.oncall.notify import Event

    if read_only or summary.budget_usd is None or held_off(store, summary.month, summary.budget_usd):
        return [], []
    cut = plan_cut(summary, at=now)
    if cut is None:
        return [], []
    done, problems = [], []
    for s in cut.schedules:
        try:
            api.suspend_scheduled_job(scheduled_job_id=s.scheduled_job_id, namespace=namespace)
            done.append(s)
        except Exception as exc:  # noqa: BLE001 - said, and the next pass tries again
            problems.append(f"budget: cannot suspend {s.scheduled_job_id} ({s.tenant}): {str(exc)[:200]}")
    if not done:
        return [], problems
    cut = BudgetCut(cut.month, cut.budget_usd, cut.projection_usd, tuple(done), now)
    remember_cut(store, cut)
    ids = ",".join(sorted(s.scheduled_job_id for s in done))
    event = Event(
        key=f"budget-cut:{cut.month}:{cut.budget_usd:.2f}:{ids}",
        kind="budget_suspended",
        level="WARN",
        title=f"{cut.month} over budget: {len(done)} schedule(s) suspended",
        text=cut.line(),
        at=now,
        data={"projection_usd": cut.projection_usd, "budget_usd": cut.budget_usd, "after_usd": cut.after_usd,
              "suspended": [asdict(s) for s in done]},
    )
    return [event], problems


def undo(api: Any, store: OnCallStore, *, namespace: str | None) -> tuple[BudgetCut | None, list[str], list[str]]:
    """Resume the schedules of the last cut: (the cut, ids resumed, problems). The action is held
    off for that month and budget from then on."""
    cut = last_cut(store)
    if cut is None:
        return None, [], []
    resumed, problems = [], []
    for s in cut.schedules:
        try:
            api.resume_scheduled_job(scheduled_job_id=s.scheduled_job_id, namespace=namespace)
            resumed.append(s.scheduled_job_id)
        except Exception as exc:  # noqa: BLE001 - a schedule deleted since: said, not fatal
            problems.append(f"cannot resume {s.scheduled_job_id} ({s.tenant}): {str(exc)[:200]}")
    forget_cut(store, cut)
    return cut, resumed, problems
