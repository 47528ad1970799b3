"""`console watch`: the on-call detectors and notifications without the TUI, for a tmux pane or a
systemd unit.

Each pass (every `--interval` seconds; `--once` for one) reads the backend and sends, once each
for good, the events the `[notify]` config routes: a job that ended ERROR or on its timeout (with
why), a stalled job still billing, a job that will hit its timeout first, a job stuck in
SCHEDULING, a Trackio ERROR alert, the month's projection over `monthly_budget_usd`. What
`console watch` was given is its own record: an event a TUI or a `console web` tab showed is
still printed here (and each webhook keeps its own record too).

Text mode prints each event as one line, then the current picture when it changes (each pass
with --once): the tenants failing now with why, stalls, overruns, jobs stuck in SCHEDULING,
failing schedules, stale live adapters, the failures of the last 24 hours, and a status line
(with the queue per flavor). `--json` prints each event as one JSON object per line, then the
picture as one object, `"event": "status"` (`failing_tenants`, `failures_24h`, `stalled`,
`overruns`, `queue`, `failing_schedules`, `stale_live`, ...), and nothing else on stdout. The
bell and desktop notifications go to stderr.

It never starts a Jobs server: with none running it says so in one line (and, without --once,
waits for one).
"""

from __future__ import annotations

import argparse
import sys
import time

from console.commands import _json


def register(sub, add_common) -> None:
    p = sub.add_parser(
        "watch",
        help="on-call: notify on failed, stalled and overrunning jobs, alerts and the budget, headless",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_common(p)
    p.add_argument("--once", action="store_true", help="one pass, then exit")
    p.add_argument("--json", action="store_true",
                   help="events as JSON, one object per line, then the picture as one status object")
    p.add_argument("--interval", type=float, default=30.0, metavar="SECONDS",
                   help="seconds between passes (default 30)")
    p.add_argument("--since", metavar="WHEN",
                   help="jobs that ended and alerts raised from then on are news: 30m, 2h, 1d, HH:MM or an ISO "
                        "time (UTC; default: a day before this data dir was first watched)")
    p.set_defaults(handler=run)


def _emit(text: str) -> None:
    print(text, flush=True)


def _write_terminal(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _connect(cfg):
    """The backend, or None (after one line on stderr) when no server runs."""
    from console.backend import NEVER, BackendError, connect
    from console.commands.ledger import plain

    try:
        return connect(cfg, start=NEVER)
    except BackendError as exc:
        print(f"watch: {plain(exc)}; nothing to watch", file=sys.stderr, flush=True)
        return None


def _watcher(cfg, backend, since=None):
    from console.oncall import Watcher
    from console.trackio_metrics import LocalTrackioReader, reader_for

    trackio_dir = backend.trackio_dir
    reader = LocalTrackioReader(trackio_dir) if trackio_dir is not None else reader_for(cfg, backend.kind)
    from console.commands._common import command_clock

    return Watcher(backend.api, cfg, namespace=backend.namespace, backend_kind=backend.kind,
                   reader=reader, write=_write_terminal, since=since, consumer="watch", clock=command_clock())


def run(args: argparse.Namespace) -> int:
    from console.commands._common import CommandError, load_config
    from console.commands.ledger import plain

    if not args.interval > 0:
        raise CommandError("--interval must be more than 0 seconds")
    since = None
    if args.since is not None:
        from datetime import UTC, datetime

        from console.inputs import parse_since

        try:
            since = parse_since(args.since, datetime.now(UTC)).timestamp()
        except ValueError as exc:
            raise CommandError(f"watch: {exc}") from None
    cfg = load_config(args)
    backend = _connect(cfg)
    if backend is None and args.once:
        return 1
    while backend is None:
        time.sleep(args.interval)
        backend = _connect_quietly(cfg)
    watcher = _watcher(cfg, backend, since)
    last_status = None
    try:
        while True:
            try:
                report = watcher.check()
            except Exception as exc:  # the backend went away or failed: say so, try again
                if args.once:
                    raise CommandError(f"watch: listing jobs failed: {plain(exc)}") from None
                print(f"watch: listing jobs failed: {plain(exc)}; retrying", file=sys.stderr, flush=True)
                time.sleep(args.interval)
                continue
            for event in report.events:
                _emit(_json.dumps(event.to_dict(), default=str) if args.json else event.line())
            picture = report.picture() + [f"watch: {report.line()}"]
            if picture != last_status:
                if args.json:
                    _emit(_json.dumps(report.status(), default=str))
                else:
                    for line in picture:
                        _emit(line if line.startswith("watch: ") else f"watch: {line}")
                last_status = picture
            if args.once:  # the webhooks of this pass are sent before the process ends
                watcher.notifier.flush(2 * float(cfg.notify.webhook_timeout_s) + 2)
            for failure in watcher.notifier.failures[-3:]:
                print(f"watch: webhook {plain(failure)}", file=sys.stderr, flush=True)
            watcher.notifier.webhooks.failures.clear()
            if args.once:
                return 0
            time.sleep(args.interval)
    finally:
        watcher.close(timeout=1.0)
        backend.close()


def _connect_quietly(cfg):
    from console.backend import NEVER, BackendError, connect

    try:
        backend = connect(cfg, start=NEVER)
    except BackendError:
        return None
    print(f"watch: watching {backend.url}", file=sys.stderr, flush=True)
    return backend
