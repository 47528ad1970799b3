"""`console adapters TENANT`: the tenant's adapter versions, and the live one serving loads.

Each version is a run: a passing one landed on `main` of the tenant's adapter repo, a failed one
(its own branch, with the reason), or a partial one (checkpoints, no final record: killed by its
timeout, still running, or its final push failed), with its commit, time, job, verdict, first and
last loss and held-out metric. The live tag (`live`) marks what serving loads.

    console adapters acme                    the versions, newest first (* marks the live one)
    console adapters acme --json
    console adapters acme --promote VERSION  move live to a passing version (a commit or run name)
    console adapters acme --rollback         move live to the passing version before it

Promote and roll back name both versions and their figures and ask first (`--yes` to skip, as a
script must); read-only refuses them. The repo is the tenant's scheduled job's `--hub-model-id`,
else `defaults.hub_model_id` with `{tenant}` filled in, else `--repo`.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(sub, add_common) -> None:
    p = sub.add_parser(
        "adapters",
        help="a tenant's adapter versions and the live one; promote or roll back",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p)
    p.add_argument("tenant", metavar="TENANT")
    acts = p.add_mutually_exclusive_group()
    acts.add_argument("--promote", metavar="VERSION", help="move live to this version (a commit or a run name)")
    acts.add_argument("--rollback", action="store_true", help="move live to the passing version before it")
    p.add_argument("--repo", metavar="ORG/NAME", help="the adapter repo (default: from the fleet or the config)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--yes", action="store_true", help="promote / roll back without asking")
    p.set_defaults(handler=run)


def tenant_repo(api, namespace: str, tenant: str, template: str | None) -> str | None:
    """The tenant's adapter repo: its scheduled job's destination, else the config's template
    (`adapters.repo_for`, the rule the TUI's Live column follows)."""
    from console import jobspec
    from console.adapters import repo_for

    try:
        scheduled = list(api.list_scheduled_jobs(namespace=namespace))
    except Exception:  # noqa: BLE001 - fall back on the template
        scheduled = []
    return repo_for(tenant, (jobspec.read_request(sj) for sj in scheduled), template)


def _line(v) -> str:
    mark = "*" if v.live else " "
    job = v.job_id[-8:] if v.job_id else "-"
    why = f" {v.failure}" if v.failure else ""
    if v.progress():
        why += f" {v.progress()}"
    if v.evaluated():
        why += f"; {v.evaluated()}"
    when = v.time[:19].replace("T", " ")
    return f"{mark} {v.short}  {when}  {v.verdict:<7} {v.run:<28} job {job:<8} {v.figures()}{why}"


def run(args: argparse.Namespace) -> int:
    from console.adapters import AdapterError, check_promotable, confirmation, list_versions, promote
    from console.backend import NEVER, BackendError, connect
    from console.commands._common import CommandError, load_config
    from console.commands.ledger import plain
    from console.jobspec import hub_model_id_problem

    action = "promote" if args.promote is not None else "rollback" if args.rollback else "list"
    if action == "promote" and not args.promote.strip():
        raise CommandError("adapters --promote: name the version (a commit or a run name)")
    if args.repo and (why := hub_model_id_problem(args.repo)):
        raise CommandError(f"adapters: --repo {why}")
    cfg = load_config(args)
    acting = action != "list"
    if acting and cfg.read_only:
        raise CommandError(f"read-only: adapters --{action} refused")
    try:
        backend = connect(cfg, start=NEVER)
    except BackendError as exc:
        raise CommandError(f"adapters: {plain(exc)}") from None
    try:
        repo = args.repo or tenant_repo(backend.api, backend.namespace, args.tenant, cfg.defaults.hub_model_id)
        if not repo:
            raise CommandError(
                f"adapters: tenant {plain(args.tenant)} has no adapter repo: no scheduled job of it names "
                "--hub-model-id and the config has no defaults.hub_model_id; pass --repo ORG/NAME"
            )
        try:
            versions = list_versions(backend.api, repo)
        except AdapterError as exc:
            raise CommandError(f"adapters: {plain(exc)}") from None
        if not acting:
            if args.json:
                print(json.dumps({"tenant": args.tenant, **versions.as_dict()}, indent=2))
                return 0
            live = versions.live
            print(f"{repo}  live ({versions.live_tag}): {live.describe() if live else 'none'}")
            for v in versions.versions:
                print(plain(_line(v)))
            if not versions.versions:
                print("no versions yet")
            return 0
        target = versions.find(args.promote) if action == "promote" else versions.previous_pass()
        if target is None:
            if action == "promote":
                raise CommandError(f"adapters: no version {plain(args.promote)} of {repo} (a commit or a run name)")
            raise CommandError(f"adapters: nothing to roll back to: no passing version of {repo} before the live one")
        try:
            check_promotable(versions, target)
        except AdapterError as exc:
            raise CommandError(f"adapters: {plain(exc)}") from None
        question = plain(confirmation(versions, target))
        if not args.yes:
            if not sys.stdin.isatty():
                raise CommandError(f"adapters: {question} (not a terminal: pass --yes)")
            answer = input(f"{question} [y/N] ").strip().lower()
            if answer not in ("y", "yes"):
                print("nothing changed")
                return 1
        try:
            promote(backend.api, versions, target)
        except AdapterError as exc:
            raise CommandError(f"adapters: {plain(exc)}") from None
        print(f"{repo}: {versions.live_tag} -> {target.describe()}")
        return 0
    finally:
        backend.close()
