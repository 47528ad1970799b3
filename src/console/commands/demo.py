"""`console demo`: the embedded Jobs server with the example fleet, runs already training, the TUI.

Puts on the server's local Hub what the example fleet names, as a fleet on HF Jobs finds it on
huggingface.co: the tiny base model (`console/tiny-causal-lm`, built once by a CPU job on the
server) and each tenant's dataset (`training/data/<tenant>.jsonl` as the dataset repo
`console/<tenant>`, uploaded when it changed). Then applies `training/fleet.example.toml` to the
local backend (idempotent: a second demo reuses the same schedules, and creates only the tenants
that are missing: a schedule the user rescheduled, suspended or edited is never reverted),
triggers a couple of tenants' runs unless some are already running, then opens the TUI on the
jobs tab so a new user sees real jobs training, logs streaming and costs within seconds. Always
the local backend, whatever the config says.
"""

from __future__ import annotations

import argparse
import dataclasses


def register(sub, add_common) -> None:
    p = sub.add_parser(
        "demo", help="the example fleet on the embedded server, in the TUI", description=__doc__
    )
    add_common(p)
    p.add_argument(
        "--trigger", type=int, default=2, metavar="N", help="tenants to run right away (default 2)"
    )
    p.add_argument("--no-tui", action="store_true", help="set the demo up and exit")
    p.set_defaults(handler=run)


DEMO_DATASET_ORG = "console"
"""The example fleet's dataset repos: `console/<name>` holds `training/data/<name>.jsonl`."""


def demo_datasets(fleet) -> dict:
    """The example fleet's dataset repos of the local Hub and the file each holds."""
    from pathlib import Path

    from console import paths

    data = paths.training_dir() / "data"
    out: dict[str, Path] = {}
    for tenant in fleet.tenants:
        org, _, name = tenant.dataset.partition("/")
        if org == DEMO_DATASET_ORG and (data / f"{name}.jsonl").is_file():
            out[tenant.dataset] = data / f"{name}.jsonl"
    return out


def setup_demo(backend, cfg, *, trigger: int = 2, report=print) -> list[str]:
    """Apply the example fleet and trigger `trigger` tenants; returns the triggered job ids."""
    from console import jobspec, paths, ship
    from console.fleet import apply_plan, load_fleet_file, plan_apply

    fleet = load_fleet_file(paths.training_dir() / "fleet.example.toml", backend_kind="local")
    api, ns = backend.api, backend.namespace
    token = getattr(api, "token", None) or None
    for repo, file in demo_datasets(fleet).items():
        if ship.upload_dataset(api, repo, file):
            report(f"Uploaded {file.parent.name}/{file.name} to the dataset repo {repo}")
    ship.seed_base_model(api, ns, token, report=report)
    plan = plan_apply(
        fleet,
        list(api.list_scheduled_jobs(namespace=ns)),
        backend_kind="local",
        timeout_buffer=cfg.defaults.timeout_buffer,
        timeout_overhead_s=cfg.defaults.timeout_overhead_s,
        trackio_project=cfg.trackio.project,
        token=token,
        hub_model_id=jobspec.default_destination(cfg.defaults.hub_model_id, "local", ns),
        datasets_cache=cfg.defaults.datasets_cache,
    )
    # Only missing tenants are created: a schedule the user rescheduled, suspended or edited is
    # theirs, never reverted (nor removed) by running the demo again.
    kept = sorted({a.tenant for a in plan.actions if a.op != "create"})
    plan = dataclasses.replace(plan, actions=[a for a in plan.actions if a.op == "create"])
    if kept:
        report(f"Kept as you left them: {', '.join(kept)} (`console fleet apply "
               f"training/fleet.example.toml` resets them to the example).")
    if plan.empty:
        report(f"Example fleet already in place ({len(plan.unchanged) + len(kept)} tenants, env={fleet.env}).")
    else:
        for line in plan.lines():
            report(line)
        apply_plan(api, plan, namespace=ns, report=report)
    from console.stages import ACTIVE_STAGES

    active = [
        j
        for j in api.list_jobs(namespace=ns, labels={"app": "console", "env": fleet.env})
        if j.status.stage in ACTIVE_STAGES
    ]
    if active:
        report(f"{len(active)} demo job(s) already running.")
        return [j.id for j in active]
    by_tenant = {}
    for sj in api.list_scheduled_jobs(namespace=ns):
        labels = jobspec.labels_of(sj)
        if labels.get("app") == "console" and labels.get("env") == fleet.env:
            by_tenant.setdefault(labels.get("tenant"), sj)
    started = []
    for tenant in [t.id for t in fleet.tenants][: max(0, trigger)]:
        sj = by_tenant.get(tenant)
        if sj is None:
            continue
        job = api.trigger_scheduled_job(scheduled_job_id=sj.id, namespace=ns)
        report(f"Triggered {tenant}: job {job.id}")
        started.append(job.id)
    return started


def run(args: argparse.Namespace) -> int:
    import msgspec

    from console.backend import DAEMON, BackendError, connect
    from console.commands._common import CommandError, load_config

    cfg = load_config(args)
    cfg = msgspec.structs.replace(cfg, backend="local", endpoint=None)
    if cfg.read_only:
        raise CommandError("read-only: the demo creates schedules and runs jobs; drop --read-only")
    try:
        backend = connect(cfg, start=DAEMON)
    except BackendError as exc:
        raise CommandError(str(exc)) from None
    try:
        try:
            setup_demo(backend, cfg, trigger=args.trigger)
        except Exception as exc:  # noqa: BLE001 (an API failure is reported, not raised)
            raise CommandError(f"demo setup failed: {exc}") from None
        if args.no_tui:
            return 0
        from console.ui.app import ConsoleApp

        ConsoleApp(cfg, backend, start_tab="jobs").run()
    finally:
        backend.close()
    return 0
