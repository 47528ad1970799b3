"""`console bulk ACTION FILTER`: cancel, suspend, resume or trigger everything a filter matches.

    console bulk cancel tenant:acme                  list acme's running and queued jobs, with
                                                     what each has billed and what cancelling saves
    console bulk cancel tenant:acme --yes-count 3    cancel them, if there are exactly 3
    console bulk suspend label:env=dev               suspend the dev schedules ($/month saved)
    console bulk resume tenant:globex                resume them ($/month they cost again)
    console bulk trigger tenant:acme                 run the schedules now (a run's cost each)

FILTER is the jobs pane's filter language (tenant:, stage:, label:k=v, bare words; quote it when
it has several terms). Nothing changes until the count is confirmed: `--yes-count N` with N the
number listed, or typed at the prompt on a terminal. A wrong count, read-only mode, or an empty
filter are refused. It never starts a Jobs server.
"""

from __future__ import annotations

import argparse
import sys

from console.commands import _json

ACTIONS = ("cancel", "suspend", "resume", "trigger")  # console.oncall.bulk.ACTIONS, kept light


def register(sub, add_common) -> None:
    p = sub.add_parser(
        "bulk",
        help="cancel / suspend / resume / trigger by filter, with its cost, after a typed count",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p)
    p.add_argument("action", choices=ACTIONS, help="what to do")
    p.add_argument("filter", nargs="+", metavar="FILTER", help="tenant:acme, label:env=dev, ...")
    p.add_argument("--yes-count", metavar="N", help="apply, if N is the number of items listed")
    p.add_argument("--json", action="store_true", help="print the plan (and outcomes) as JSON")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from console.backend import NEVER, BackendError, connect
    from console.commands._common import CommandError, command_now, load_config
    from console.commands.ledger import plain
    from console.ledger import Ledger, LedgerError, live_prices
    from console.oncall import BulkRefused, apply_bulk, check_confirmation, plan_bulk
    from console.trackio_metrics import LocalTrackioReader, reader_for

    cfg = load_config(args)
    filter_text = " ".join(args.filter)
    try:
        backend = connect(cfg, start=NEVER)
    except BackendError as exc:
        raise CommandError(f"bulk: {plain(exc)}") from None
    try:
        try:
            history = Ledger().entries()
        except LedgerError:
            history = []
        trackio_dir = backend.trackio_dir
        reader = LocalTrackioReader(trackio_dir) if trackio_dir is not None else reader_for(cfg, backend.kind)
        try:
            plan = plan_bulk(
                backend.api, args.action, filter_text, namespace=backend.namespace,
                prices=live_prices(backend.api, cfg.billing.granularity),
                read_only=bool(cfg.read_only), reader=reader, project=cfg.trackio.project,
                history=history, now=command_now(),
            )
        except BulkRefused as exc:
            raise CommandError(f"bulk: {exc}") from None
        except Exception as exc:
            raise CommandError(f"bulk: reading the backend failed: {plain(exc)}") from None

        if args.json and args.yes_count is None:
            print(_json.dumps(plan.to_dict(), indent=2))
        elif not args.json:
            for line in plan.lines():
                print(plain(line, 200))
        confirmation = args.yes_count
        if confirmation is None:
            if plan.count == 0 or plan.read_only or not sys.stdin.isatty():
                if plan.read_only:
                    print("read-only: nothing will be changed", file=sys.stderr)
                elif plan.count:
                    print(f"to apply: --yes-count {plan.count}", file=sys.stderr)
                return 0
            try:
                confirmation = input(f"Type {plan.count} to {args.action} them (anything else: no): ")
            except EOFError:
                confirmation = ""
        try:
            check_confirmation(plan, confirmation)
            result = apply_bulk(backend.api, plan, confirmation, namespace=backend.namespace)
        except BulkRefused as exc:
            raise CommandError(f"bulk: {exc}") from None
    finally:
        backend.close()
    if args.json:
        doc = plan.to_dict()
        doc["outcomes"] = [{"id": o.item.target_id, "ok": o.ok, "message": o.message}
                           for o in result.outcomes]
        print(_json.dumps(doc, indent=2))
    else:
        for o in result.outcomes:
            print(("ok    " if o.ok else "FAILED ") + plain(o.message, 200))
        print(f"{result.done} of {plan.count} done")
    return 0 if not result.failed else 1
