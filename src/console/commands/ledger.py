"""`console ledger`: bring the cost ledger up to date from the backend, then print it, headless.

The default output is the pane's summary (month to date, by tenant, by month, wasted spend, plan
floor, projection to month end, budget) and the most recent entries. `--json` prints the list of
entries (each with job_id, tenant, flavor, running_seconds, cost_usd and the rest of the row),
`--csv` the same as CSV; `--summary` prints the summary without the entries (`--summary --json`:
the summary object). `--tenant` names a tenant the ledger knows (an unknown one is an error, not
an empty list). `--no-refresh` prints what the ledger already holds without asking the backend.
"""

from __future__ import annotations

import argparse
import csv
import re
import sys

from console.commands import _json

CSV_COLUMNS = (
    "job_id", "tenant", "kind", "env", "flavor", "price_per_hour", "running_seconds", "cost_usd",
    "stage", "wasted", "created_at", "started_at", "finished_at", "month", "model_b", "examples",
    "epochs", "unsloth", "run_name", "scheduled_job_id", "running_source", "price_source",
    "message", "cost_known",
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def register(sub, add_common) -> None:
    p = sub.add_parser(
        "ledger",
        help="what finished jobs cost: refresh the cost ledger from the backend and print it",
        description=(
            "Record every finished job's cost (running seconds x the flavor's price) in the "
            "ledger, once per job id, then print spend by tenant and month, the projection to "
            "month end and the budget."
        ),
    )
    add_common(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the entries as a JSON list")
    out.add_argument("--csv", action="store_true", help="print the entries as CSV")
    p.add_argument(
        "--summary", action="store_true",
        help="the summary only, without the entries (with --json: the summary object)",
    )
    p.add_argument("--no-refresh", action="store_true", help="do not ask the backend; print the ledger")
    p.add_argument("--month", help="only entries of this month (YYYY-MM)")
    p.add_argument("--tenant", help="only entries of this tenant")
    p.add_argument("--limit", type=int, default=15, help="entries listed in the text output (default 15)")
    p.add_argument("--ledger", metavar="PATH", help="ledger file (default: the user data dir)")
    p.set_defaults(handler=run)


def plain(text: object, width: int | None = None) -> str:
    """Untrusted text made safe for a terminal: control characters become spaces."""
    s = _CONTROL.sub(" ", "" if text is None else str(text))
    if width is not None and len(s) > width:
        s = s[: max(0, width - 1)] + "…"
    return s


def _csv_cell(value: object) -> object:
    # A cell a spreadsheet would run as a formula is quoted as text (job messages are untrusted).
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def run(args: argparse.Namespace) -> int:
    from console.commands._common import CommandError, command_now, load_config
    from console.ledger import Ledger, LedgerError, summary_for_config

    if args.month is not None and not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", args.month):
        raise CommandError(f"--month must look like 2026-12, got {args.month!r}")
    if args.summary and args.csv:
        raise CommandError("--summary goes with the text output or --json, not --csv")
    cfg = load_config(args)
    now = command_now()
    try:
        ledger = Ledger(args.ledger)
    except LedgerError as exc:
        raise CommandError(str(exc)) from None

    snapshot = None
    if not args.no_refresh:
        snapshot = _refresh(ledger, cfg)
        if snapshot is not None:
            r = snapshot.recorded
            print(
                f"ledger: {r.added} new entr{'y' if r.added == 1 else 'ies'} "
                f"({r.terminal} finished, {len(r.active)} active job(s) seen; {r.price_source})",
                file=sys.stderr,
            )
    if args.tenant is not None:
        known = sorted({e.tenant for e in ledger.entries()})
        if args.tenant not in known:
            listed = ", ".join(plain(t, 40) for t in known[:20]) or "none yet"
            raise CommandError(f"unknown tenant {plain(args.tenant, 60)!r}: the ledger's tenants are {listed}")
    entries = ledger.entries(month=args.month, tenant=args.tenant)

    if args.json and args.summary:
        print(_json.dumps(summary_for_config(ledger, cfg, snapshot, now=now).to_dict(), indent=2))
        return 0
    if args.json:
        print(_json.dumps([_entry_dict(e) for e in entries], indent=2))
        return 0
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        for e in entries:
            d = _entry_dict(e)
            writer.writerow([_csv_cell(d[c]) for c in CSV_COLUMNS])
        return 0
    limit = 0 if args.summary else args.limit
    _print_text(summary_for_config(ledger, cfg, snapshot, now=now), entries, limit, ledger.path)
    return 0


def _entry_dict(entry) -> dict:
    """An entry as printed: a job whose running time is unknown has no running seconds and no
    cost (null / empty), not zeros."""
    d = entry.to_dict()
    d["cost_known"] = entry.known
    if not entry.known:
        d["running_seconds"] = d["cost_usd"] = None
    return d


def _refresh(ledger, cfg):
    from console.commands._common import CommandError
    from console.ledger import LedgerError, record_from_api

    try:
        from console import backend as backend_mod
    except ImportError:
        raise CommandError(
            "this console has no backend module: use --no-refresh to print the ledger as it is"
        ) from None
    try:
        backend = backend_mod.connect(cfg, start=backend_mod.NEVER)  # a report starts nothing
    except backend_mod.BackendError as exc:
        print(f"ledger: {plain(exc)}; showing the ledger as last recorded", file=sys.stderr)
        return None
    except Exception as exc:
        raise CommandError(f"cannot reach the {cfg.backend} backend: {plain(exc)}") from None
    try:
        namespace = getattr(backend, "namespace", None) or cfg.namespace
        return record_from_api(ledger, backend.api, namespace=namespace, granularity=cfg.billing.granularity)
    except LedgerError as exc:
        raise CommandError(str(exc)) from None
    except Exception as exc:
        raise CommandError(f"listing jobs failed: {plain(exc)}") from None
    finally:
        backend.close()


def _print_text(s, entries, limit: int, path) -> None:
    from console.inputs import format_duration
    from console.jobspec import retry_words

    print(f"Cost ledger {path} — {s.entries} entr{'y' if s.entries == 1 else 'ies'}")
    print(f"Month {s.month}:  spent ${s.month_to_date_usd:,.2f}", end="")
    if s.in_flight_usd:
        print(f" + ${s.in_flight_usd:,.2f} in flight", end="")
    print(f"; wasted on timeouts ${s.wasted_usd:,.2f} ({s.wasted_runs} run(s))")
    print(f"Plan floor:   ${s.plan_floor_usd:,.2f} ({s.plan} x {s.seats} seat(s))")
    active = [f for f in s.schedules if not f.suspended]
    paused = [f for f in s.schedules if f.suspended]
    suspended = (f" ({len(paused)} suspended: $0, would be ${sum(f.would_be_month_usd for f in paused):,.2f}/month)"
                 if paused else "")
    print(
        f"Schedules:    ${s.scheduled_remaining_usd:,.2f} more this month from "
        f"{sum(f.remaining_runs for f in active)} firing(s) of {len(active)} schedule(s)"
        f"{suspended}; ${s.scheduled_month_usd:,.2f}/month"
    )
    budget = "no budget set" if s.budget_usd is None else f"budget ${s.budget_usd:,.2f}"
    print(f"Projection:   ${s.projection_usd:,.2f} by month end ({budget})")
    if s.budget_warning:
        print(f"WARNING: {s.budget_warning}")
    if s.unknown_runs:
        shown = ", ".join(plain(j, 24) for j in s.unknown_jobs[:5]) + (", ..." if s.unknown_runs > 5 else "")
        print(
            f"Unknown cost: {s.unknown_runs} finished job(s) the Jobs API gave no running time for "
            f"(no durations, no finish time); in no total above: {shown}"
        )
    if s.by_tenant:
        print()
        print(f"  {'Tenant':<24}{'Runs':>6}{'This month':>13}{'All time':>12}{'Wasted':>10}")
        for t in s.by_tenant:
            print(
                f"  {plain(t.tenant, 23):<24}{t.runs:>6}{'$' + format(t.month_usd, ',.2f'):>13}"
                f"{'$' + format(t.total_usd, ',.2f'):>12}{'$' + format(t.wasted_usd, ',.2f'):>10}"
            )
    if len(s.by_month) > 1 or (s.by_month and s.month not in s.by_month):
        print()
        print("  " + "  ".join(f"{m} ${v:,.2f}" for m, v in s.by_month.items()))
    if entries and limit > 0:
        print()
        print(f"  {'Job':<26}{'Tenant':<16}{'Flavor':<12}{'Ran':>8}{'Cost':>10}  Stage")
        for e in entries[-limit:]:
            stage = e.stage + (" (timed out: wasted)" if e.wasted else "")
            if retry := retry_words(e.labels):
                stage += f" ({retry} of {e.labels.get('retry_of')})"
            ran = format_duration(e.running_seconds) if e.known else "?"
            cost = "$" + format(e.cost_usd, ",.4f") if e.known else "unknown"
            print(
                f"  {plain(e.job_id, 25):<26}{plain(e.tenant, 15):<16}{plain(e.flavor, 11):<12}"
                f"{ran:>8}{cost:>10}  {stage}"
            )
