"""`console budget show | undo`: what the budget suspended, and its undo.

With `budget_action = "suspend"` in the config, the on-call watcher (the TUI's, or `console
watch`) suspends schedules, the most expensive this month first, when the month's projection
passes `monthly_budget_usd`. `show` prints what it suspended and why (`--json` too); `undo`
resumes those schedules, and the budget warns from then on for that month and budget instead
of suspending them again. It never starts a Jobs server.
"""

from __future__ import annotations

import argparse
import json


def register(sub, add_common) -> None:
    p = sub.add_parser("budget", help="what the budget suspended (show) and its undo",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(p)
    p.add_argument("action", choices=("show", "undo"), help="show the last cut, or resume what it suspended")
    p.add_argument("--json", action="store_true", help="the cut as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from console.commands._common import CommandError, load_config
    from console.oncall.budget import last_cut, undo
    from console.oncall.store import OnCallStore

    cfg = load_config(args)
    store = OnCallStore()
    if args.action == "show":
        cut = last_cut(store)
        if args.json:
            print(json.dumps(None if cut is None else {**asdict(cut), "after_usd": cut.after_usd}))
        else:
            print("The budget has suspended nothing." if cut is None else cut.line())
        return 0
    if cfg.read_only:
        raise CommandError("budget undo: read-only: nothing resumed")
    from console.backend import NEVER, BackendError, connect
    from console.commands.ledger import plain

    try:
        backend = connect(cfg, start=NEVER)
    except BackendError as exc:
        raise CommandError(f"budget undo: {plain(exc)}") from None
    try:
        cut, resumed, problems = undo(backend.api, store, namespace=backend.namespace)
    finally:
        backend.close()
    if cut is None:
        print("The budget has suspended nothing: nothing to undo.")
        return 0
    names = {s.scheduled_job_id: s.tenant for s in cut.schedules}
    for sj_id in resumed:
        print(f"resumed {names[sj_id]} (schedule {sj_id})")
    for problem in problems:
        print(f"console: budget undo: {problem}")
    print(f"The budget will warn, not suspend, for the rest of {cut.month} at ${cut.budget_usd:,.2f}.")
    return 1 if problems else 0
