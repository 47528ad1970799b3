"""`console fleet`: the tenant fleet, headless.

    console fleet show [--json] [--at TIME]     the fleet as HF Jobs says it is (or was at TIME)
    console fleet apply FILE.toml [--dry-run] [--no-preflight]   make the scheduled jobs match a fleet file

`apply` checks each tenant's local dataset file with the dataset validator (a tenant whose data
fails is refused, nothing is applied) and prints the plan (create / change / remove); `--dry-run`
stops there. Then it runs the CPU dataset preflight (~$0.01 a dataset on HF Jobs) of every tenant
whose dataset changed since its last preflight (`<data dir>/preflight.json` remembers each
dataset's content hash and result), applies the plan, and exits 1 when a preflight failed: that
tenant's schedule is created or kept suspended (no GPU minute bills for data known bad), flagged
`preflight` with why in `fleet show` and the Fleet tab, and it resumes at the apply whose
preflight of its changed dataset passes (unless the file says `suspend = true`). Applying the same
file twice changes nothing. Refused in read-only mode (except `--dry-run`).
"""

from __future__ import annotations

import argparse

from console.commands import _json


def register(sub, add_common) -> None:
    p = sub.add_parser(
        "fleet",
        help="show the tenant fleet, or apply a fleet file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p)
    fleet_sub = p.add_subparsers(dest="fleet_command", metavar="ACTION", required=True)
    show = fleet_sub.add_parser("show", help="the fleet derived from scheduled jobs and job labels")
    add_common(show)
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument(
        "--at", metavar="TIME",
        help="the fleet as it was at TIME (HH:MM, 30m, 2h, an ISO time; UTC): each tenant's last run "
             "and its stage then, and the live version the console saw then",
    )
    show.set_defaults(handler=run_show)
    apply = fleet_sub.add_parser("apply", help="make the scheduled jobs match a fleet file")
    add_common(apply)
    apply.add_argument("file", help="fleet file (TOML; see training/fleet.example.toml)")
    apply.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    apply.add_argument("--no-preflight", action="store_true", help="skip the CPU dataset preflight jobs")
    apply.set_defaults(handler=run_apply)


def _connect(cfg, *, acting: bool):
    """The backend; `acting`: this command changes something, so it may start the local daemon
    (a report or a dry run reads a running server and starts nothing)."""
    from console.backend import DAEMON, NEVER, BackendError, connect
    from console.commands._common import CommandError

    try:
        return connect(cfg, start=DAEMON if acting else NEVER)
    except BackendError as exc:
        raise CommandError(str(exc)) from None


def _api_error(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def run_apply(args: argparse.Namespace) -> int:
    from console.commands._common import CommandError, load_config
    from console.fleet import FleetFileError, PlanRefused, apply_plan, desired_request, load_fleet_file, plan_apply
    from console.fleet.preflight import held, local_problem, run_preflights, stored_results
    from console.jobspec import default_destination
    from console.ship import BaseModelCheck

    cfg = load_config(args)
    try:
        fleet = load_fleet_file(args.file, default_env=cfg.defaults.env, backend_kind=cfg.backend)
    except FleetFileError as exc:
        lines = "\n".join(f"  - {p}" for p in exc.problems)
        raise CommandError(f"{exc.path}: {len(exc.problems)} problem(s):\n{lines}") from None
    if cfg.read_only and not args.dry_run:
        raise CommandError("read-only: fleet apply refused (use --dry-run to see the plan)")
    token = None
    if cfg.backend == "hub":
        from huggingface_hub import get_token

        token = get_token()
    backend = _connect(cfg, acting=not args.dry_run)
    if backend.kind != "hub":  # a tenant pushing to a repo pushes to the local server's Hub
        token = getattr(backend.api, "token", None) or None
    try:
        try:
            scheduled = list(backend.api.list_scheduled_jobs(namespace=backend.namespace))
        except Exception as exc:  # noqa: BLE001 (any API failure is reported, not raised)
            raise CommandError(f"cannot list scheduled jobs: {_api_error(exc)}") from None
        destination = default_destination(cfg.defaults.hub_model_id, backend.kind, backend.namespace)

        def planned(held=None):
            return plan_apply(
                fleet,
                scheduled,
                backend_kind=backend.kind,
                timeout_buffer=cfg.defaults.timeout_buffer,
                timeout_overhead_s=cfg.defaults.timeout_overhead_s,
                token=token,
                trackio_project=cfg.trackio.project,
                trackio_space_id=cfg.trackio.space_id,
                hub_model_id=destination,
                datasets_cache=cfg.defaults.datasets_cache,
                base_models=BaseModelCheck(backend.api, backend.kind),
                datasets=local_problem,
                held=held,
            )

        try:
            plan = planned()  # a refused tenant stops everything here, before any preflight job
        except PlanRefused as exc:
            lines = "\n".join(f"  - {p}" for p in exc.problems)
            count = len(exc.problems)
            raise CommandError(f"{args.file}: nothing applied, {count} tenant(s) refused:\n{lines}") from None
        failed = []
        requests = [
            desired_request(t, fleet, backend_kind=backend.kind, trackio_project=cfg.trackio.project,
                            trackio_space_id=cfg.trackio.space_id, hub_model_id=destination,
                            datasets_cache=cfg.defaults.datasets_cache)
            for t in fleet.tenants
        ]  # fmt: skip
        if args.dry_run and not args.no_preflight:  # held as the last preflights of unchanged data say
            plan = planned(held(stored_results(backend.api, requests)))
        if not args.dry_run and not args.no_preflight:
            build = dict(backend_kind=backend.kind, timeout_buffer=cfg.defaults.timeout_buffer,
                         timeout_overhead_s=cfg.defaults.timeout_overhead_s, token=token)  # fmt: skip
            try:
                results = run_preflights(backend.api, requests, namespace=backend.namespace, build=build)
            except Exception as exc:  # noqa: BLE001
                raise CommandError(f"preflight stopped, nothing applied: {_api_error(exc)}") from None
            failed = [r.tenant for r in results if not r.passed]
            plan = planned(held(results))  # a tenant whose data failed keeps its schedule suspended
        for line in plan.lines():
            print(line)
        if args.dry_run or plan.empty:
            if plan.empty:
                print("Nothing to do: the scheduled jobs match the fleet file.")
        else:
            try:
                apply_plan(backend.api, plan, namespace=backend.namespace, report=print)
            except Exception as exc:  # noqa: BLE001
                raise CommandError(f"apply stopped: {_api_error(exc)}") from None
            print("Applied.")
        if failed:
            print(f"Preflight failed for {', '.join(failed)}: their schedules are suspended (no run bills for data "
                  "known bad) until a preflight of a changed dataset passes.")
            return 1
        return 0
    finally:
        backend.close()


def run_show(args: argparse.Namespace) -> int:
    from console.commands._common import CommandError, command_now, load_config
    from console.fleet import derive_fleet
    from console.jobs import format_age, format_cost, format_month, job_row, queue_line, scheduling_queue

    cfg = load_config(args)
    backend = _connect(cfg, acting=False)

    from console.fleet.preflight import failure_reason

    now = command_now()
    at, live = None, {}
    if args.at:
        from console.inputs import parse_since

        try:
            at = parse_since(args.at, now, field="--at")
        except ValueError as exc:
            backend.close()
            raise CommandError(str(exc)) from None
        if at > now:
            backend.close()
            raise CommandError(f"--at: {at:%Y-%m-%d %H:%M} UTC is in the future")
    try:
        try:
            scheduled = list(backend.api.list_scheduled_jobs(namespace=backend.namespace))
            jobs = list(backend.api.list_jobs(namespace=backend.namespace))
        except Exception as exc:  # noqa: BLE001
            raise CommandError(f"cannot read the fleet: {_api_error(exc)}") from None
        from console.ledger import live_prices

        prices = live_prices(backend.api, cfg.billing.granularity)  # as the ledger and bulk price
        if at is not None:
            rows, live = _fleet_at(cfg, backend, scheduled, jobs, at, prices)
            now, held = at, {}  # ages count to that time; a preflight's reason is read for the present
        else:
            rows = derive_fleet(scheduled, jobs, now=now, prices=prices)
            held = {r.tenant: failure_reason(backend.api, r.preflight_job_id, backend.namespace) or "see its log"
                    for r in rows if r.preflight_failed and r.preflight_job_id}  # why each is held: few
    finally:
        backend.close()
    if args.json:
        print(
            _json.dumps(
                [
                    {
                        "tenant": r.tenant,
                        "kind": r.kind,
                        "env": r.env,
                        "base_model": r.base_model,
                        "flavor": r.flavor,
                        "schedule": r.schedule,
                        "schedule_words": r.schedule_words,
                        "next_run": r.next_run.isoformat() if r.next_run else None,
                        "suspended": r.suspended,
                        "scheduled_job_id": r.scheduled_job_id,
                        "last_job_id": r.last_job_id,
                        "last_stage": r.last_stage,
                        "last_at": r.last_at.isoformat() if r.last_at else None,
                        "cost_per_run_usd": r.cost_per_run,
                        "monthly_usd": r.monthly_usd,
                        "would_be_monthly_usd": r.would_be_monthly_usd,
                        "left_this_month_usd": r.left_this_month_usd,
                        "flags": r.flags,
                        "preflight_job_id": r.preflight_job_id,
                        "preflight_reason": held.get(r.tenant),
                        **({"as_of": at.isoformat(), "live": live.get(r.tenant, (None, None))[0]}
                           if at is not None else {}),
                    }
                    for r in rows
                ],
                indent=2,
            )
        )
        return 0
    if not rows:
        print("No tenants yet: `console fleet apply FILE.toml` creates their schedules.")
        return 0
    if at is not None:
        print(f"The fleet as of {at:%Y-%m-%d %H:%M:%S} UTC: each run's stage then "
              "(schedules and costs are today's; LIVE: the version the console saw live then)")
    print(
        f"{'TENANT':<12} {'KIND':<7} {'FLAVOR':<11} {'SCHEDULE':<12} {'LAST RUN':<10} {'AGE':<8} "
        f"{'$/RUN':>7} {'$/MONTH':>8}  FLAGS"
    )
    for r in rows:  # the builder model last, as its own row
        kind = "embed" if r.kind == "embedding" else r.kind
        print(
            f"{r.tenant:<12} {kind:<7} {r.flavor or '-':<11} {r.schedule or 'ad hoc':<12} "
            f"{r.last_stage or 'never':<10} {format_age(r.last_at, now):<8} "
            f"{format_cost(r.cost_per_run):>7} {format_month(r.monthly_usd, r.suspended):>8}  "
            f"{','.join(r.flags)}" + (f"  LIVE {live.get(r.tenant, ('?', None))[0]}" if at is not None else "")
        )
        if r.tenant in held:
            print(f"{'':<12} preflight failed (job {r.preflight_job_id}): {held[r.tenant]}"
                  + ("; suspended until a preflight passes" if r.suspended else ""))
    if at is not None:
        return 0
    queue = queue_line(scheduling_queue((job_row(j, now=now) for j in jobs), now), now)
    if queue:  # what waits for a machine, per flavor: `3 waiting: 2 on h200x8 since 03:14 (12h 5m)`
        print(f"\nSCHEDULING: {queue}")
    return 0


def _fleet_at(cfg, backend, scheduled, jobs, at, prices):
    """The fleet rows as of `at` (`console.fleet.past`) and the Live cells the console saw by then
    (kept in the local cache by the TUI: `console.cache.past`)."""
    from console.cache import JobCache, cache_path
    from console.cache.past import live_as_of
    from console.fleet.past import fleet_as_of

    rows = fleet_as_of(scheduled, jobs, at, prices=prices)
    path = cache_path(backend.kind, backend.namespace, cfg.endpoint)
    live = {}
    if path.exists():
        cache = JobCache(path)
        try:
            live = live_as_of(cache, at)
        finally:
            cache.close()
    return rows, live
