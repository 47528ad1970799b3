"""`console logs JOB_ID`: a job's log as plain text, as `hf jobs logs` prints it, with a filter.

JOB_ID is the full id or any unique start or end of it (the 8 characters the jobs table shows).
`--grep TERM` prints only the lines that contain TERM (case ignored), or, written `/.../`, the lines
a regular expression finds in: the same rule as the log pane's `&` filter. `-f` follows the log
until the job ends, filtering each new line as it arrives. `--tail N` starts from the last N lines.
Lines are printed as plain text: escape sequences and control characters are removed. With
`--grep`, how many lines matched goes to standard error at the end. It never starts a Jobs server.
"""

from __future__ import annotations

import argparse
import sys


def register(sub, add_common) -> None:
    p = sub.add_parser(
        "logs",
        help="a job's log as plain text (-f follows; --grep TERM or /regex/ keeps only matching lines)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p)
    p.add_argument("job_id", metavar="JOB_ID", help="the job: its id, or a unique start or end of it (the 8 shown)")
    p.add_argument("-f", "--follow", action="store_true", help="follow the log until the job ends")
    p.add_argument("--grep", metavar="TERM",
                   help="only the lines with TERM (case ignored); /regex/ for a regular expression")
    p.add_argument("--tail", metavar="N", help="only the last N lines (before following)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from console.backend import NEVER, BackendError, connect
    from console.backend.job_ids import JobIdError, check_job_id, resolve_job_id
    from console.commands._common import CommandError, load_config
    from console.commands.ledger import plain
    from console.inputs import LineFilter, parse_count
    from console.jobs import clean_log_line

    try:
        keep = LineFilter(args.grep) if args.grep else None
        tail = parse_count("--tail", args.tail) if args.tail is not None else None
        check_job_id(args.job_id)  # before anything is asked of anyone
    except (ValueError, JobIdError) as exc:
        raise CommandError(f"logs: {exc}") from None
    cfg = load_config(args)
    try:
        backend = connect(cfg, start=NEVER)
    except BackendError as exc:
        raise CommandError(f"logs: {plain(exc)}") from None
    shown = seen = 0
    try:
        try:
            job_id = resolve_job_id(backend.api, args.job_id, namespace=backend.namespace)
        except JobIdError as exc:
            raise CommandError(f"logs: {exc}") from None
        kwargs = {"tail": tail} if tail is not None else {}
        try:
            lines = backend.api.fetch_job_logs(job_id=job_id, namespace=backend.namespace,
                                               follow=args.follow, **kwargs)
            for raw in lines:
                line = clean_log_line(raw)
                seen += 1
                if keep is None or keep(line):
                    shown += 1
                    sys.stdout.write(line + "\n")
                    if args.follow:
                        sys.stdout.flush()
        except Exception as exc:
            raise CommandError(f"logs: cannot read the log of {plain(job_id)}: {plain(exc, 300)}") from None
    finally:
        backend.close()
    if keep is not None:
        print(f"{shown} of {seen} lines matched {args.grep!r}", file=sys.stderr)
    return 0
