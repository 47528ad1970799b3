"""`console incident JOB_ID|TENANT`: write a job's incident bundle (Markdown) and print where it is.

JOB_ID is the full id or any unique start or end of it, such as the last 8 characters the jobs
table shows; an ambiguous one lists the jobs it could be. A tenant id (the `tenant` label of its
jobs) names that tenant's newest failed job (ended ERROR, a timeout included).

The bundle holds the job as the Jobs API says it is, its stage history, labels, cost so far,
CPU and memory (while it runs), its Trackio progress and alerts, the last checkpoint a run that
pushes to a Hub repo pushed (what `R` resumes from), the command that reproduces it
and the last 200 log lines as plain text (`--since WHEN`: the lines from then on, each with
the time the Jobs API stamped it). It goes to `<data dir>/incidents/` unless `--out DIR`.
`--copy` (or `notify.osc52 = true`) also puts the path on the terminal's clipboard (OSC 52).
It never starts a Jobs server.
"""

from __future__ import annotations

import argparse
import sys

from console.stages import ERROR


def register(sub, add_common) -> None:
    p = sub.add_parser(
        "incident",
        help="write a job's incident bundle (Markdown: inspect, stages, log tail, cost, Trackio)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p)
    p.add_argument("job_id", metavar="JOB_ID|TENANT",
                   help="the job: its id, or a unique start or end of it (the 8 shown); or a tenant: its newest "
                        "failed job")
    p.add_argument("--out", metavar="DIR", help="folder to write to (default: <data dir>/incidents)")
    p.add_argument("--copy", action="store_true", help="put the path on the clipboard (OSC 52)")
    p.add_argument("--since", metavar="WHEN",
                   help="the log from then on, each line with its time: 30m, 2h, 1d, HH:MM or an ISO time (UTC)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from console.backend import NEVER, BackendError, connect
    from console.backend.job_ids import JobIdError, check_job_id
    from console.commands._common import CommandError, load_config
    from console.commands.ledger import plain
    from console.labels import is_name
    from console.ledger import live_prices
    from console.oncall import clipboard_escape
    from console.oncall.escapes import for_terminal
    from console.oncall.incident import gather, render, save_incident
    from console.trackio_metrics import LocalTrackioReader, reader_for

    since = None
    if args.since is not None:
        from datetime import UTC, datetime

        from console.inputs import parse_since

        try:
            since = parse_since(args.since, datetime.now(UTC))
        except ValueError as exc:
            raise CommandError(f"incident: {exc}") from None
    if not (is_name(args.job_id) or _is_job_id(args.job_id)):  # before anything is asked of anyone
        try:
            check_job_id(args.job_id)
        except JobIdError as exc:
            raise CommandError(f"incident: {exc}") from None
    cfg = load_config(args)
    try:
        backend = connect(cfg, start=NEVER)
    except BackendError as exc:
        raise CommandError(f"incident: {plain(exc)}") from None
    try:
        trackio_dir = backend.trackio_dir
        reader = LocalTrackioReader(trackio_dir) if trackio_dir is not None else reader_for(cfg, backend.kind)
        try:
            job_id = resolve_target(backend.api, args.job_id, namespace=backend.namespace)
            facts = gather(backend.api, job_id, namespace=backend.namespace, reader=reader,
                           project=cfg.trackio.project, since=since)
        except JobIdError as exc:
            raise CommandError(f"incident: {exc}") from None
        except Exception as exc:
            raise CommandError(f"incident: cannot read job {plain(args.job_id)}: {plain(exc, 300)}") from None
        text = render(facts, prices=live_prices(backend.api, cfg.billing.granularity))
    finally:
        backend.close()
    try:
        path = save_incident(text, facts.job.id, out_dir=args.out)
    except OSError as exc:
        raise CommandError(f"incident: cannot write the bundle: {plain(exc)}") from None
    print(path)
    if args.copy or cfg.notify.osc52:
        escape = clipboard_escape(path)
        if escape and sys.stderr.isatty():
            sys.stderr.write(for_terminal(escape))
            sys.stderr.flush()
    return 0


def _is_job_id(text: str) -> bool:
    from console.backend.job_ids import JobIdError, check_job_id

    try:
        check_job_id(text)
    except JobIdError:
        return False
    return True


class _Listed:
    """An `HfApi` stand-in whose `list_jobs` answers one listing already read (no second read)."""

    def __init__(self, jobs: list) -> None:
        self.jobs = jobs

    def list_jobs(self, **_: object) -> list:
        return self.jobs


def resolve_target(api, text: str, *, namespace: str | None = None) -> str:
    """The job `text` names: a full job id as it is; else, when some job of `namespace` carries
    the tenant label `text`, that tenant's newest job that ended ERROR; else the one job whose id
    starts or ends with `text` (`resolve_job_id`). JobIdError (one line) when it names none, or a
    tenant with no failed job."""
    from console.backend.job_ids import FULL_ID, JobIdError, resolve_job_id
    from console.jobspec import labels_held

    value = text.strip()
    if FULL_ID.fullmatch(value):
        return value
    jobs = list(api.list_jobs(namespace=namespace))
    tenants = [j for j in jobs if labels_held(j).get("tenant") == value]
    if not tenants:
        if not _is_job_id(value):
            where = f" in namespace {namespace!r}" if namespace else ""
            raise JobIdError(f"no tenant {value!r}{where}: no job carries that tenant label (and it is no job id)")
        return resolve_job_id(_Listed(jobs), value, namespace=namespace)
    failed = [j for j in tenants if j.status.stage == ERROR]
    if not failed:
        raise JobIdError(f"tenant {value!r} has no failed job ({len(tenants)} job(s), none ended ERROR); "
                         "give a job id")

    def ended(job) -> float:
        when = getattr(job, "finished_at", None) or getattr(job, "created_at", None)
        return when.timestamp() if when is not None else 0.0

    return str(max(failed, key=ended).id)
