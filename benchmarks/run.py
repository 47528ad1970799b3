"""The console's performance suite at fleet scale, beside the peers, with every goal met or missed.

    python benchmarks/run.py [--runs 5] [--lines 1000000] [--scales 100x10000,1000x10000,...]
                             [--no-write] [--only startup,imports,scale,logs,whatif,scripts]

Run on demand (not in CI, not in the test suite). For each scale point (`TENANTSxJOBS`: 100 /
1,000 / 10,000 tenants; 10,000 / 50,000 / 100,000 jobs) it seeds a throwaway data folder with
that many tenants' scheduled jobs (through the real API) and finished jobs (bulk, into the
server's SQLite store), serves it with a real `console serve` process on loopback, and measures:

1. start-up (at 1,000 tenants and 10,000 jobs): process spawn to the kept picture of the last
   screen, painted before Textual loads (`frame`), to Textual's frame painted from the local
   cache (`snapshot`), to the first frame with fresh data (`fresh`) and to the frame with
   every job known (`full`), for the real `console` in an 80x24 pseudo-terminal (run through
   `stamped_console.py`, which stamps `$CONSOLE_BENCH_READY_FILE` after each is painted), warm
   (a cache from the last run) and cold
   (none); beside `hf jobs ps -a` and `hf jobs ps -a --limit 0` against the same server, and the
   floors (the same Python importing textual and huggingface_hub; a bare Textual app with a header,
   a 100-row table and a footer, and no huggingface_hub: the honest peer of the first frame); the
   import-time profile of the start path. Every pair compared runs in turn (A B A B), and each
   ratio is printed as the median of its pairs with their min-max;
2. at every scale point: CPU and HTTP requests per quiet refresh of the running app (in-process,
   headless; the refresh's own CPU, the idle between refreshes taken off), the warm start to
   every job known beside `hf jobs ps -a --limit 0` on the same server, idle CPU and resident
   memory of the real console in its terminal, the time from its first frame to settled (a 2 s
   window under 2% of a core), and the server's resident memory (now and its peak) after serving
   the console and the whole list; with `--soak-minutes N`, at the largest point, the untouched
   console's RSS once a minute for N minutes (the growth goal is judged at 60);
3. logs: lines/s from a job's stdout through the real SSE stream and the log pane to the
   terminal, key-to-frame latency while it streams, beside `hf jobs logs --follow`;
4. what-if: the per-tenant projection of 1,000 and 10,000 tenants after one assumption changes,
   and the real what-if screen's recompute and opening with 10,000 schedules;
5. training scripts: process start to the VERDICT line for what `sft_lora.py` refuses early.

It prints every figure and a table of the goals (measured / goal / met or missed, with why), and
rewrites the figures section of BENCHMARKS.md (between the `figures` markers). Loopback only;
every process it starts is stopped by its id. The whole run takes tens of minutes at the
largest scale point (100,000 jobs of 48 KB each are 4.8 GB of JSON to seed and read once).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import (  # noqa: E402
    HF_BIN,
    NAMESPACE,
    PtyProcess,
    SharedServer,
    Workspace,
    compile_console,
    median,
    p95,
    peak_rss,
    seed_fleet,
    start_console,
    wait_stamp,
)

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "BENCHMARKS.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"
QUIET_REFRESHES = 24
"""Refresh cycles a quiet-refresh figure is the median of (a few milliseconds each: fewer read noise as a trend)."""
DEFAULT_SCALES = "100x10000,1000x10000,1000x50000,1000x100000,10000x100000"
MIB = 2**20
REOPENED = "reopened console: first frame with jobs (the kept picture) vs hf jobs ps -a, same server"
FLAT_RATIO, FLAT_SLACK_S = 1.5, 0.002
"""A quiet refresh is flat when its 10,000-tenant CPU is within 1.5x, or 2 ms, of the 100-tenant one."""


@dataclass
class Figure:
    section: str
    name: str
    value: str
    peer: str = ""
    ratio: str = ""
    goal: str = ""
    met: bool | None = None


@dataclass
class Goal:
    name: str
    measured: str
    goal: str
    met: bool | None
    why: str = ""


@dataclass
class Results:
    figures: list[Figure] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)
    goals: list[Goal] = field(default_factory=list)
    raw: dict[str, float] = field(default_factory=dict)

    def add(self, *args, **kwargs) -> Figure:
        fig = Figure(*args, **kwargs)
        self.figures.append(fig)
        mark = "" if fig.met is None else ("  [goal met]" if fig.met else "  [GOAL MISSED]")
        line = f"  {fig.name}: {fig.value}"
        if fig.peer:
            line += f"  | {fig.peer}"
        if fig.ratio:
            line += f"  | {fig.ratio}"
        if fig.goal:
            line += f"  | goal {fig.goal}{mark}"
        print(line, flush=True)
        return fig

    def note(self, section: str, text: str) -> None:
        self.notes.setdefault(section, []).append(text)
        print(f"    {text}", flush=True)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _run_wall(argv: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def _scale_name(tenants: int, jobs: int) -> str:
    return f"{tenants:,} tenants, {jobs:,} jobs"


# -- 1. start-up -------------------------------------------------------------------------------


_BARE_TEXTUAL_APP = """
import sys, time
from textual.app import App
from textual.widgets import DataTable, Footer, Header

class Bare(App):
    def compose(self):
        yield Header()
        yield DataTable()
        yield Footer()

    def on_mount(self):
        table = self.query_one(DataTable)
        table.add_columns("id", "tenant", "kind", "stage", "flavor", "started", "ran", "cost")
        for i in range(100):
            table.add_row("%024x" % i, "t%04d" % i, "sft", "COMPLETED", "l4x1", "10:00", "12m", "$0.16")
        self.call_after_refresh(self.stamp)

    def stamp(self):
        with open(sys.argv[1], "w") as out:
            out.write("fresh %.6f\\n" % time.time())

Bare().run()
"""
"""The honest floor for the console's first frame: a bare Textual app with the same kinds of widget
(a header, a 100-row table of the jobs' columns, a footer) and nothing else: no huggingface_hub,
which the console does not import before its first frame either."""


def _bare_app_start(ws: Workspace) -> float:
    """Seconds from spawn to the bare app's first frame."""
    stamp = ws.root / "bare-ready"
    with contextlib.suppress(FileNotFoundError):
        stamp.unlink()
    proc = PtyProcess([sys.executable, "-c", _BARE_TEXTUAL_APP, str(stamp)], ws.env()).spawn()
    try:
        return wait_stamp(proc, stamp, "fresh")
    finally:
        proc.close()


def spread_of(ratios: list[float]) -> str:
    """A ratio's median with its min-max: `0.95x (0.88-1.04x, 5 pairs)`."""
    return f"{median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}x, {len(ratios)} pairs)"


def _console_start(ws: Workspace, ready: Path, wants: tuple[str, ...]) -> dict[str, float]:
    """Seconds from spawn to each stamp in `wants`, and to `frame` when the kept picture was painted
    (`console.firstframe`: a start after a quit from the jobs tab, at the same terminal size)."""
    proc = start_console(ws, ready)
    try:
        out = {what: wait_stamp(proc, ready, what, timeout=900) for what in wants}
        if "frame" in (found := harness.stamps(ready)):
            out["frame"] = found["frame"] - proc.spawned_at
        return out
    finally:
        proc.close()


def bench_startup(res: Results, ws: Workspace, server: SharedServer, runs: int) -> None:
    print("\n1. Start-up", flush=True)
    ready = ws.root / "ready"
    # Fresh starts (no cache) and the bare app in turn, A B A B: each pair ran under the same load,
    # so each ratio is read from its own pair
    colds, bare_app, pairs = [], [], []
    for _ in range(runs):
        harness.forget_cache(ws)
        colds.append(_console_start(ws, ready, ("painted", "fresh", "full")))
        bare_app.append(_bare_app_start(ws))
        pairs.append(colds[-1]["painted"] / bare_app[-1])
    cold = {what: median([c[what] for c in colds]) for what in ("painted", "fresh", "full")}
    # each start quits from the jobs tab, so the next one paints the picture it kept first; each warm
    # start and `hf jobs ps -a` (and, every other time, `--limit 0`) run in turn
    env = server.hf_env()
    _console_start(ws, ready, ("snapshot", "fresh", "full"))
    warm, hf_ps, hf_all = [], [], []
    for i in range(runs):
        warm.append(_console_start(ws, ready, ("snapshot", "fresh", "full")))
        hf_ps.append(_run_wall([str(HF_BIN), "jobs", "ps", "-a"], env))
        if i % 2 == 0:
            hf_all.append(_run_wall([str(HF_BIN), "jobs", "ps", "-a", "--limit", "0"], env))
    frame_pairs = [w["frame"] / h for w, h in zip(warm, hf_ps, strict=True) if "frame" in w]
    frames = [w["frame"] for w in warm if "frame" in w]
    snap = [w["snapshot"] for w in warm]
    fresh = [w["fresh"] for w in warm]
    full = [w["full"] for w in warm]
    quits = []
    for _ in range(runs):
        # `q` at the first fresh frame of a start without a cache, while the whole list is read
        harness.forget_cache(ws)
        proc = start_console(ws, ready)
        try:
            wait_stamp(proc, ready, "fresh")
            t_q = time.perf_counter()
            proc.send(b"q")
            while proc.alive() and time.perf_counter() - t_q < 30:
                time.sleep(0.01)
            quits.append(time.perf_counter() - t_q)
        finally:
            proc.close()
    _console_start(ws, ready, ("full",))  # leave a warm cache for what follows
    py = sys.executable
    libs = [_run_wall([py, "-c", "import textual.app, huggingface_hub.hf_api"], env) for _ in range(runs)]
    res.raw.update(fresh_pairs_min=min(pairs), fresh_pairs_max=max(pairs), fresh_pairs=median(pairs))
    res.raw.update(snapshot=median(snap), fresh=median(fresh), full=median(full), cold_full=cold["full"],
                   cold_fresh=cold["fresh"], cold_painted=cold["painted"], hf_ps=median(hf_ps), hf_all=median(hf_all),
                   bare_app=median(bare_app), frames_painted=len(frames), warm_starts=len(warm))
    if frames:
        res.raw.update(frame=median(frames), frame_pairs=median(frame_pairs), frame_pairs_min=min(frame_pairs),
                       frame_pairs_max=max(frame_pairs))
    spread = lambda v: f"median of {len(v)} (min {_ms(min(v))}, max {_ms(max(v))})"  # noqa: E731
    res.add("startup", "reopened console: spawn to the kept picture of its jobs on the terminal (before Textual)",
            f"{_ms(median(frames))} {spread(frames)}" if frames else f"not painted in any of {len(warm)} starts",
            peer=f"hf jobs ps -a {_ms(median(hf_ps))}, run in turn with each",
            ratio=f"{spread_of(frame_pairs)} hf" if frame_pairs else "")
    res.add("startup", "spawn to Textual's first frame, painted from the local cache (warm start)",
            f"{_ms(median(snap))} {spread(snap)}", peer=f"hf jobs ps -a {_ms(median(hf_ps))}",
            ratio=f"{median(snap) / median(hf_ps):.2f}x hf")
    res.add("startup", "spawn to the first frame with fresh data (warm start)",
            f"{_ms(median(fresh))} {spread(fresh)}", peer=f"bare Textual app {_ms(median(bare_app))}",
            ratio=f"{median(fresh) / median(bare_app):.2f}x the bare app")
    res.add("startup", "spawn to every job known and the fleet derived (warm start: catch-up from the cache)",
            _ms(median(full)), peer=f"hf jobs ps -a --limit 0 {_ms(median(hf_all))}",
            ratio=f"{median(full) / median(hf_all):.2f}x hf")
    res.add("startup", "first start (no cache): spawn to Textual's first frame (the screens, before any data)",
            f"{_ms(cold['painted'])} {spread([c['painted'] for c in colds])}",
            peer=f"bare Textual app {_ms(median(bare_app))}, started in turn with each",
            ratio=f"{spread_of(pairs)} the bare app")
    res.add("startup", "first start (no cache): spawn to the first fresh frame / to every job read",
            f"{_ms(cold['fresh'])} / {_ms(cold['full'])}", peer=f"hf jobs ps -a --limit 0 {_ms(median(hf_all))}",
            ratio=f"{cold['full'] / median(hf_all):.2f}x hf")
    res.add("startup", "q at the first frame of a first start, while the whole list is read, to the exit",
            f"{_ms(median(quits))} median of {runs} (max {_ms(max(quits))})")
    res.add("startup", "floor: python -c 'import textual.app, huggingface_hub.hf_api'", _ms(median(libs)))
    res.add("startup", "floor: a bare Textual app (a header, a 100-row table, a footer; no hf) to its first frame",
            _ms(median(bare_app)))


def bench_imports(res: Results, ws: Workspace, top: int = 12) -> None:
    print("\n1b. Import-time profile of the start path (to the first frame)", flush=True)
    code = "import console.cli, console.commands, console.commands.tui, console.config, console.ui.app"
    env = ws.env()
    subprocess.run([sys.executable, "-c", code], env=env, check=True)  # warm the caches
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env,
                          capture_output=True, text=True, check=True)
    rows = []
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(2)), len(m.group(3)), m.group(4)))
    total = sum(r[0] for r in rows)
    own = sum(r[0] for r in rows if r[3].startswith("console"))
    top_level = sorted((r for r in rows if r[2] == 0), key=lambda r: -r[1])[:top]
    by_own = sorted(rows, key=lambda r: -r[0])[:top]
    res.add("imports", "all imports of the start path (self times summed)",
            f"{total / 1000:.0f} ms, {len(rows)} modules ({own / 1000:.0f} ms in console's own)")
    names = {r[3] for r in rows}
    off_path = sorted(n for n in names if n.split(".")[0] in ("huggingface_hub", "trackio", "torch")
                      or n.startswith(("console.server", "console.backend", "console.fleet", "console.ledger")))
    res.add("imports", "huggingface_hub, the server, the backend, fleet or ledger on the path to the first frame",
            ", ".join(off_path[:6]) or "none", goal="none", met=not off_path)
    res.note("imports", "top-level imports by cumulative time: " + ", ".join(
        f"{name} {cum / 1000:.0f} ms" for _, cum, _, name in top_level))
    res.note("imports", "modules by own time: " + ", ".join(
        f"{name} {own_us / 1000:.1f} ms" for own_us, _, _, name in by_own))


# -- 2. each scale point ---------------------------------------------------------------------------


class _RequestCounter:
    def __init__(self) -> None:
        self.count = 0
        self.paths: dict[str, int] = {}

    def __call__(self, request) -> None:
        self.count += 1
        path = re.sub(r"/[0-9a-f]{20,}", "/<id>", request.url.path)
        self.paths[path] = self.paths.get(path, 0) + 1

    def install(self) -> None:
        """Hook into the session huggingface_hub shares (whatever factory the backend set up)."""
        from huggingface_hub.utils import get_session

        session = get_session()
        hooks = session.event_hooks
        hooks.setdefault("request", []).append(self)
        session.event_hooks = hooks


async def _measure_refreshes(refreshes: int) -> dict[str, float]:
    """Run ConsoleApp headless at 80x24 against the running server; per-refresh requests and CPU,
    after every job is known and the app has settled (no worker running)."""
    from console.backend import NEVER, connect
    from console.config import load
    from console.ui.app import ConsoleApp

    counter = _RequestCounter()
    cfg = load(None)
    backend = connect(cfg, start=NEVER)
    counter.install()
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    out: dict[str, float] = {}
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            t0 = time.monotonic()
            while not app.refresher.synced and time.monotonic() - t0 < 900:
                await asyncio.sleep(0.05)
            out["synced_s"] = time.monotonic() - t0
            quiet = 0
            t_synced = time.monotonic()
            # settled: ~3 s without one-off work; a worker that never rests (the on-call watcher
            # reading a long list pass after pass) is measured with the refreshes after 120 s
            # (and the why-failed column filled: 6 log tails a refresh until every failed job on
            # screen and every tenant's failed last run is read, one-off catching up)
            while quiet < 10 and time.monotonic() - t_synced < 120:
                busy = [w.group for w in app.workers if w.is_running and w.group not in ("refresh", "logs")]
                if app.reasons.wanted():
                    busy.append("reasons")
                quiet = 0 if busy else quiet + 1
                await asyncio.sleep(0.3)
            out["busy"] = sorted(set(busy))  # type: ignore[assignment]
            out["settled_s"] = time.monotonic() - t_synced
            base_n, base_req = app.refresher.refresh_count, counter.count
            base_wall = time.monotonic()
            counter.paths.clear()
            # each cycle (one refresh to the next) on its own: the median, so that a one-off burst
            # of other work landing in the window (the on-call watcher's budget projection every
            # few minutes, a costs update) does not read as the refresh's cost
            # (the clocks are read as each refresh is applied, not by polling: a loop waking every
            # few milliseconds to look would charge its own wake-ups to the refresh)
            cycles: list[tuple[float, float]] = []
            last = [time.process_time(), time.monotonic()]
            apply = app.refresher.apply

            def timed_apply(message):
                apply(message)
                c, w = time.process_time(), time.monotonic()
                cycles.append((c - last[0], w - last[1]))
                last[:] = [c, w]

            app.refresher.apply = timed_apply
            while app.refresher.refresh_count < base_n + refreshes and time.monotonic() - t0 < 1500:
                await asyncio.sleep(0.5)
            app.refresher.apply = apply
            n = app.refresher.refresh_count - base_n
            cycle_wall = median([w for _, w in cycles]) if cycles else (time.monotonic() - base_wall) / max(1, n)
            out["requests"] = (counter.count - base_req) / max(1, n)
            out["cycle_s"] = median([c for c, _ in cycles]) if cycles else 0.0
            out["cycle_mean_s"] = sum(c for c, _ in cycles) / max(1, len(cycles))
            # the same app with no refresh due: what it costs between refreshes, taken off the cycle
            app.refresher.interval = 1e6
            last = app.refresher.refresh_count
            t_wait = time.monotonic()
            while app.refresher.refresh_count == last and time.monotonic() - t_wait < 2:
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)
            rates = []  # ten 0.3 s windows, the median: a burst of other work is not idle
            for _ in range(10):
                c0, w0 = time.process_time(), time.monotonic()
                await asyncio.sleep(0.3)
                rates.append((time.process_time() - c0) / (time.monotonic() - w0))
            out["idle_rate"] = median(rates)
            out["cpu_s"] = max(0.0, out["cycle_s"] - out["idle_rate"] * cycle_wall)
            out["paths"] = dict(counter.paths)  # type: ignore[assignment]
            out["rows"] = app.jobs_table.row_count
            out["tenants"] = len(app.refresher.fleet_rows)
            await pilot.press("q")
    finally:
        backend.close()
    return out


def _steady_in_subprocess(ws: Workspace, refreshes: int) -> dict:
    import json

    here = str(Path(__file__).resolve().parent)
    code = (
        f"import asyncio, json, sys; sys.path.insert(0, {here!r}); import run; "
        f"print('RESULT', json.dumps(asyncio.run(run._measure_refreshes({refreshes}))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=ws.env(), capture_output=True,
                          text=True, timeout=2400)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("steady-state run failed:\n" + proc.stdout[-2000:] + proc.stderr[-3000:])


def _settle(ps, least: float = 5.0, most: float = 120.0, busy: float = 0.10) -> float:
    """Wait until the one-off work after a start is done: at least `least` seconds, then until a
    2-second window uses under `busy` of a core (or `most` seconds); the seconds waited."""
    t0 = time.monotonic()
    time.sleep(least)
    while time.monotonic() - t0 < most:
        c0, w0 = ps.cpu_times(), time.monotonic()
        time.sleep(2.0)
        c1, w1 = ps.cpu_times(), time.monotonic()
        if (c1.user + c1.system - c0.user - c0.system) / (w1 - w0) < busy:
            break
    return time.monotonic() - t0


SETTLED_BUSY = 0.02
"""Settled: a 2-second window using under 2% of a core (the idle goal)."""
SOAK_SAMPLE_SECONDS = 60.0


def _settled_after(ps, first_frame_at: float, most: float = 600.0) -> float:
    """Seconds from the first frame (a `time.monotonic()` instant) to the start of the first 2-second
    window that uses under SETTLED_BUSY of a core (`most` when none came)."""
    while time.monotonic() - first_frame_at < most:
        c0, w0 = ps.cpu_times(), time.monotonic()
        time.sleep(2.0)
        c1, w1 = ps.cpu_times(), time.monotonic()
        if (c1.user + c1.system - c0.user - c0.system) / (w1 - w0) < SETTLED_BUSY:
            return w0 - first_frame_at
    return most


def _soak(ps, minutes: float) -> list[tuple[float, int]]:
    """(minutes since the soak began, RSS) once a minute for `minutes`, the console untouched."""
    samples, t0 = [(0.0, ps.memory_info().rss)], time.monotonic()
    while (elapsed := time.monotonic() - t0) < minutes * 60:
        time.sleep(min(SOAK_SAMPLE_SECONDS, minutes * 60 - elapsed))
        samples.append(((time.monotonic() - t0) / 60, ps.memory_info().rss))
        print(f"    soak {samples[-1][0]:.0f} min: RSS {samples[-1][1] / MIB:.0f} MiB", flush=True)
    return samples


def bench_scale(res: Results, ws: Workspace, server: SharedServer, tenants: int, jobs: int,
                idle_seconds: float, warm_runs: int = 3, hf_runs: int = 2, soak_minutes: float = 0.0) -> None:
    import psutil

    name = _scale_name(tenants, jobs)
    print(f"\n2. {name}", flush=True)
    ready = ws.root / "ready"
    if not (ws.data_dir / "cache").exists():
        t0 = time.monotonic()
        _console_start(ws, ready, ("full",))  # the first start reads everything into the cache
        res.note("scale", f"{name}: first start read every job in {time.monotonic() - t0:.0f} s")
    proc = start_console(ws, ready)
    try:
        ps = psutil.Process(proc.pid)
        snapshot = wait_stamp(proc, ready, "snapshot", timeout=900)
        first_frame_at = time.monotonic() - (time.time() - proc.spawned_at - snapshot)
        full = wait_stamp(proc, ready, "full", timeout=900)
        settle = _settled_after(ps, first_frame_at)  # the other tabs mount, the costs pane summarizes
        settled = _settle(ps)  # and anything that starts later
        t0, c0 = time.monotonic(), ps.cpu_times()
        time.sleep(idle_seconds)
        c1, t1 = ps.cpu_times(), time.monotonic()
        idle = (c1.user + c1.system - c0.user - c0.system) / (t1 - t0)
        soak = _soak(ps, soak_minutes) if soak_minutes > 0 else []
        rss, peak = ps.memory_info().rss, peak_rss(proc.pid)
    finally:
        proc.close()
    # the whole list, warm, beside hf reading it whole from the same server, in turn (A B A B)
    env = server.hf_env()
    fulls, hf_all = [full], [_run_wall([str(HF_BIN), "jobs", "ps", "-a", "--limit", "0"], env)]
    for i in range(max(0, max(warm_runs, hf_runs) - 1)):
        if i < warm_runs - 1:
            fulls.append(_console_start(ws, ready, ("full",))["full"])
        if i < hf_runs - 1:
            hf_all.append(_run_wall([str(HF_BIN), "jobs", "ps", "-a", "--limit", "0"], env))
    steady = _steady_in_subprocess(ws, QUIET_REFRESHES)
    srv = psutil.Process(server.proc.pid)
    srv_rss, srv_peak = srv.memory_info().rss, peak_rss(server.proc.pid)
    key = f"{tenants}x{jobs}"
    full = median(fulls)
    res.raw[f"settle:{key}"] = settle
    if soak:
        res.raw.update({f"soak_minutes:{key}": soak[-1][0], f"soak_rss:{key}": soak[-1][1],
                        f"soak_max:{key}": max(r for _, r in soak), f"soak_first:{key}": soak[0][1]})
        res.add("scale", f"{name}: console RSS untouched for {soak[-1][0]:.0f} min (once a minute)",
                ", ".join(f"{m:.0f}m {r / MIB:.0f}" for m, r in soak[:: max(1, len(soak) // 12)]) + " MiB",
                peer=f"max {max(r for _, r in soak) / MIB:.0f} MiB, last {soak[-1][1] / MIB:.0f} MiB")
    res.add("scale", f"{name}: first frame to settled (a 2 s window under {SETTLED_BUSY:.0%} of a core)",
            f"{settle:.0f} s")
    res.raw.update({f"idle:{key}": idle, f"rss:{key}": rss, f"peak:{key}": peak, f"cpu:{key}": steady["cpu_s"],
                    f"req:{key}": steady["requests"], f"srv_rss:{key}": srv_rss, f"srv_peak:{key}": srv_peak,
                    f"full:{key}": full, f"hf_all:{key}": median(hf_all)})
    res.add("scale", f"{name}: CPU / HTTP requests per quiet refresh (headless app)",
            f"{_ms(steady['cpu_s'])} / {steady['requests']:.1f} (the whole 0.3 s cycle, idle included: "
            f"{_ms(steady['cycle_s'])} median, {_ms(steady.get('cycle_mean_s', steady['cycle_s']))} mean)",
            peer=", ".join(f"{p} {n}" for p, n in sorted(steady["paths"].items()))
            + f"; measured {steady.get('settled_s', 0):.0f} s after every job was known"
            + (f"; still running: {', '.join(steady['busy'])}" if steady.get("busy") else ""))
    res.add("scale", f"{name}: idle CPU of the real app ({idle_seconds:.0f} s, refresh every 2 s)",
            f"{idle * 100:.1f}% of a core", peer=f"measured {settled:.0f} s after every job was known")
    res.add("scale", f"{name}: console RSS (peak)", f"{rss / MIB:.0f} MiB ({peak / MIB:.0f} MiB)")
    res.add("scale", f"{name}: server RSS after serving the console and the whole list (peak)",
            f"{srv_rss / MIB:.0f} MiB ({srv_peak / MIB:.0f} MiB)")
    res.add("scale", f"{name}: warm start to every job known and the fleet derived",
            f"{_ms(full)} median of {len(fulls)} (min {_ms(min(fulls))}, max {_ms(max(fulls))})",
            peer=f"hf jobs ps -a --limit 0 {_ms(median(hf_all))} (median of {len(hf_all)})",
            ratio=f"{full / median(hf_all):.2f}x hf")


def serve_whole_list(server: SharedServer) -> None:
    """What the server must survive: the whole job list and every schedule read once by `hf`."""
    env = server.hf_env()
    subprocess.run([str(HF_BIN), "jobs", "scheduled", "ps", "-a"], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=1800)
    api = server.api()
    for _ in api.list_jobs(namespace=NAMESPACE):
        pass


# -- 3. logs -----------------------------------------------------------------------------------

_JOB_CODE = """
import os, sys, time
go = sys.argv[1]  # a file the bench creates in the job's working folder: the job sees no other host path
print('bench-log-ready', flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
w = sys.stdout.write
for i in range(int(sys.argv[2])):
    w('step %d loss=0.%06d lr=5e-3 the quick brown fox jumps over the lazy dog\\n' % (i, i))
sys.stdout.flush()
"""


def _start_log_job(api, ws: Workspace, name: str, lines: int) -> tuple[str, Path]:
    job = api.run_job(
        image="python:3.12",
        command=["python", "-c", _JOB_CODE, "go", str(lines)],
        labels={"app": "console", "tenant": f"logs-{name}", "env": "prod", "kind": "sft"},
        namespace=NAMESPACE,
        timeout=900,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        info = api.inspect_job(job_id=job.id, namespace=NAMESPACE)
        if info.status.stage == "RUNNING":
            break
        time.sleep(0.05)
    return job.id, ws.data_dir / "server" / "work" / job.id / "go"  # the job's working folder, on the host


def p99(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


def bench_logs(res: Results, ws: Workspace, server: SharedServer, lines: int) -> None:
    import psutil

    print("\n3. Logs", flush=True)
    api = server.api()
    ours_id, ours_go = _start_log_job(api, ws, "console", lines)
    ready = ws.root / "ready"
    proc = start_console(ws, ready)
    counts = re.compile(rb"(\d+)/(\d+) lines|\s(\d+) lines")
    latencies: list[float] = []
    try:
        wait_stamp(proc, ready, "full", timeout=900)  # the baseline holds every job: count the log's own
        # The console keeps the job it last had selected (across starts, and as new jobs arrive
        # above it): ctrl+home takes the cursor to the newest job, the one streaming.
        proc.send(b"\x1b[1;5H")
        t_attach, _ = proc.wait_for(re.compile(rb"\b1 lines"), timeout=30)
        if t_attach is None:
            raise RuntimeError("the log pane did not attach to the job's stream")
        ps = psutil.Process(proc.pid)
        # The seeded fleet has failed jobs: the first on-call pass (5 s after start) toasts them,
        # and at 80x24 its toasts cover the log pane's title, where the counts and the follow /
        # paused word are read. Stream once they are gone (and the one-off work after a start).
        from console.ui.watch import FIRST_WATCH_SECONDS, TOAST_SECONDS

        _settle(ps)
        time.sleep(max(0.5, proc.spawned_at + FIRST_WATCH_SECONDS + TOAST_SECONDS + 2 - time.time()))
        rss_before = ps.memory_info().rss
        proc.clear_output()
        t_go = time.perf_counter()
        ours_go.touch()
        received = 0
        t_last = t_go
        offset = 0
        next_probe = t_go + 0.3
        paused = False
        deadline = t_go + 300
        while received < lines + 1 and time.perf_counter() < deadline:
            time.sleep(0.01)
            with proc._lock:
                data = bytes(proc.output[offset:])
            for m in counts.finditer(data):
                value = int(m.group(2) or m.group(3))
                if value > received:
                    received, t_last = value, time.perf_counter()
            offset += max(0, len(data) - 64)
            if time.perf_counter() >= next_probe and received < lines * 0.9:
                # key-to-frame: `f` pauses / resumes follow; the frame shows " paused"/" follow"
                want = b" follow" if paused else b" paused"
                since = proc.size()
                t_key = time.perf_counter()
                proc.send(b"f")
                t_seen, _ = proc.wait_for(want, since=since, timeout=5)
                if t_seen is not None:
                    latencies.append(t_seen - t_key)
                paused = not paused
                next_probe = time.perf_counter() + 0.25
        ours_s = t_last - t_go
        rss_after = ps.memory_info().rss
    finally:
        proc.close()
    ours_rate = lines / ours_s if received >= lines else received / ours_s

    peer_id, peer_go = _start_log_job(api, ws, "hf", lines)
    hf = PtyProcess([str(HF_BIN), "jobs", "logs", "--follow", peer_id], server.hf_env()).spawn()
    peak = 0
    try:
        hf.wait_for(b"bench-log-ready", timeout=30)
        hps = psutil.Process(hf.pid)
        t_go = time.perf_counter()
        peer_go.touch()
        deadline = t_go + 300
        while hf.alive() and time.perf_counter() < deadline:
            peak = max(peak, hps.memory_info().rss)
            time.sleep(0.05)
        hf_s = time.perf_counter() - t_go
        hf_lines = hf.output.count(b"\n") - 1
    finally:
        hf.close(quit_key=None)
    hf_rate = hf_lines / hf_s
    res.raw.update(log_ratio=ours_rate / hf_rate, key_p99=p99(latencies), key_n=len(latencies))
    res.add("logs", f"lines/s, job stdout -> SSE -> log pane -> terminal ({lines:,} lines)",
            f"{ours_rate:,.0f} lines/s ({received - 1:,} lines in {ours_s:.1f} s)",
            peer=f"hf jobs logs --follow {hf_rate:,.0f} lines/s ({hf_lines:,} in {hf_s:.1f} s)",
            ratio=f"{ours_rate / hf_rate:.2f}x hf")
    res.add("logs", "key-to-frame latency while the log streams",
            f"median {_ms(median(latencies))}, p95 {_ms(p95(latencies))}, p99 {_ms(p99(latencies))}, "
            f"max {_ms(max(latencies) if latencies else float('nan'))} (n={len(latencies)})")
    res.add("logs", f"console RSS after {lines:,} lines",
            f"{rss_after / MIB:.0f} MiB ({(rss_after - rss_before) / MIB:+.0f} MiB over the stream's start)",
            peer=f"hf jobs logs --follow peak {peak / MIB:.0f} MiB",
            goal="bounded", met=rss_after - rss_before < 64 * MIB)
    for job_id in (ours_id, peer_id):
        with contextlib.suppress(Exception):  # already finished
            api.cancel_job(job_id=job_id, namespace=NAMESPACE)


# -- 4. what-if ----------------------------------------------------------------------------------


def _fleet(tenants: int):
    from console.costs import RunSpec

    return [
        (RunSpec((1.0, 3.0, 7.0)[i % 3], 500 + (i * 37) % 4000, (1.0, 2.0, 3.0)[i % 3],
                 harness.FLAVORS[i % len(harness.FLAVORS)] if i % 3 != 2 else "a10g-large"),
         harness.CRONS[i % len(harness.CRONS)])
        for i in range(tenants)
    ]


def bench_whatif(res: Results, tenant_counts: list[int], server: SharedServer | None, runs: int = 30) -> None:
    from dataclasses import replace

    from console.prices import shipped_price_book
    from console.scenario import fleet_projection

    print("\n4. What-if", flush=True)
    prices = shipped_price_book()
    l4 = prices.flavors["l4x1"]
    dearer = replace(prices, flavors={**prices.flavors,
                                      "l4x1": replace(l4, price_per_hour=l4.price_per_hour * 1.2)})
    for tenants in tenant_counts:
        fleet = _fleet(tenants)
        fleet_projection(fleet, prices)  # warm the cron cache, as an open what-if pane would have
        price_times, epoch_times = [], []
        for _ in range(runs):
            t0 = time.perf_counter()
            fleet_projection(fleet, dearer)
            price_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            fleet_projection(fleet, prices, epochs_delta=1.0)
            epoch_times.append(time.perf_counter() - t0)
        worst = max(p95(price_times), p95(epoch_times))
        res.raw[f"whatif:{tenants}"] = worst
        res.add("whatif", f"per-tenant projection of {tenants:,} tenants, l4x1 price +20% / epochs +1",
                f"{median(price_times) * 1000:.2f} / {median(epoch_times) * 1000:.2f} ms median, "
                f"p95 {p95(price_times) * 1000:.2f} / {p95(epoch_times) * 1000:.2f} ms")
    if server is not None:
        from console import jobspec

        scheduled = [jobspec.compact_job(s) for s in server.api().list_scheduled_jobs(namespace=NAMESPACE)]
        out = asyncio.run(_measure_whatif_screen(scheduled, runs))
        res.raw["whatif_screen"] = out["p95"]
        res.add("whatif", f"the what-if screen with {len(scheduled):,} schedules: recompute on a change",
                f"{out['median'] * 1000:.2f} ms median, p95 {out['p95'] * 1000:.2f} ms",
                peer=f"opening it (the fleet's monthly cost) {_ms(out['open'])}")


async def _measure_whatif_screen(scheduled: list, runs: int) -> dict[str, float]:
    from textual.app import App
    from textual.widgets import Input

    from console.config import Config
    from console.ui.screens.whatif import WhatIfScreen

    cfg = Config(namespace=NAMESPACE)
    t0 = time.perf_counter()
    screen = WhatIfScreen(cfg, scheduled_jobs=scheduled)
    opened = time.perf_counter() - t0

    class Host(App):
        def on_mount(self) -> None:
            self.push_screen(screen)

    times = []
    async with Host().run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        box = screen.query_one("#wi-epochs", Input)
        for i in range(runs):
            box.value = str(1 + i % 4)
            t0 = time.perf_counter()
            screen.recompute()
            times.append(time.perf_counter() - t0)
    return {"median": median(times), "p95": p95(times), "open": opened}


# -- 5. training scripts ---------------------------------------------------------------------------


def bench_scripts(res: Results, runs: int) -> None:
    print("\n5. Training scripts", flush=True)
    training = REPO / "training"
    acme = training / "data" / "acme.jsonl"
    with tempfile.TemporaryDirectory(prefix="console-bench-scripts-") as tmp:
        root = Path(tmp)
        bad = root / "bad.jsonl"
        bad.write_text(
            '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\n'
            '{"messages": [{"role": "user", "content": "hi"}, {"role": "bot", "content": "yo"}]}\n'
        )
        env = {k: v for k, v in os.environ.items() if k != "HF_TOKEN"}
        env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRACKIO_DIR=str(root / "trackio"),
                   CONSOLE_ARTIFACTS_DIR=str(root / "artifacts"))
        sft, validate = str(training / "sft_lora.py"), str(training / "validate_dataset.py")
        cases = [
            ("sft_lora.py refuses a Hub push without HF_TOKEN",
             [sft, "--base-model", "tiny-random", "--dataset", str(acme),
              "--hub-model-id", "acme-corp/acme-adapter"], "VERDICT: FAIL hf_token_missing"),
            ("sft_lora.py refuses a dataset with a bad row",
             [sft, "--base-model", "tiny-random", "--dataset", str(bad)], "VERDICT: FAIL bad_dataset"),
            ("validate_dataset.py checks a 300-row JSONL",
             [validate, str(acme), "--max-length", "512"], "VERDICT: PASS"),
        ]
        for name, argv, verdict in cases:
            times = []
            last = ""
            for _ in range(runs):
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, *argv], env=env, capture_output=True,
                                      text=True, timeout=120)
                times.append(time.perf_counter() - t0)
                last = (proc.stdout.strip().splitlines() or [""])[-1]
            ok = last.startswith(verdict)
            res.add("scripts", f"{name}: start to VERDICT line",
                    f"median {_ms(median(times))}, p95 {_ms(p95(times))}"
                    + ("" if ok else f" (ended {last[:60]!r}, not {verdict!r})"),
                    goal="< 1 s", met=ok and p95(times) < 1.0)


# -- the goals -------------------------------------------------------------------------------------


def judge(res: Results) -> None:
    """The goal rows, each measured in this run: measured / goal / met, with why."""
    r = res.raw

    def has(*keys: str) -> bool:
        return all(k in r for k in keys)

    if has("frame", "hf_ps", "frame_pairs"):
        ratio = r["frame_pairs"]
        res.goals.append(Goal(REOPENED,
                              f"{_ms(r['frame'])} = {ratio:.2f}x hf jobs ps -a ({_ms(r['hf_ps'])}; pairs "
                              f"{r['frame_pairs_min']:.2f}-{r['frame_pairs_max']:.2f}x); "
                              f"painted in {r['frames_painted']:.0f} of {r['warm_starts']:.0f} starts",
                              "<= 0.25x hf jobs ps -a", ratio <= 0.25 and r["frames_painted"] == r["warm_starts"]))
    elif has("hf_ps"):
        res.goals.append(Goal(REOPENED,
                              f"no kept picture painted in {r['warm_starts']:.0f} starts", "<= 0.25x hf jobs ps -a",
                              False))
    if has("cold_painted", "fresh", "bare_app", "fresh_pairs"):
        ratio = r["fresh_pairs"]
        res.goals.append(Goal("fresh start (no cache): Textual's first frame vs a bare Textual app with the same "
                              "widgets (no huggingface_hub), started in turn",
                              f"{_ms(r['cold_painted'])} = {ratio:.2f}x the bare app ({_ms(r['bare_app'])}; pairs "
                              f"{r['fresh_pairs_min']:.2f}-{r['fresh_pairs_max']:.2f}x); "
                              f"the first frame with fresh data: {r['cold_fresh'] / r['bare_app']:.2f}x "
                              f"(warm start {r['fresh'] / r['bare_app']:.2f}x)",
                              "<= 1.2x the bare app", ratio <= 1.2))
    points = sorted((k.split(":", 1)[1] for k in r if k.startswith("cpu:")),
                    key=lambda k: tuple(int(n) for n in k.split("x")))

    def largest(show) -> str:
        """What the largest scale point run measured: context for a goal row not run, not a figure for it."""
        if not points:
            return "no scale point run"
        key = points[-1]
        tenants, jobs = (int(n) for n in key.split("x"))
        return f"largest point run ({tenants:,} tenants, {jobs:,} jobs): {show(key)}"

    wide = [k for k in points if k.startswith("10000x")]
    narrow = [k for k in points if k.startswith("100x")]
    if wide:
        key = wide[-1]
        cpu = r[f"cpu:{key}"]
        measured, flat = _ms(cpu), None
        if narrow:
            small = r[f"cpu:{narrow[0]}"]
            flat = cpu <= max(FLAT_RATIO * small, small + FLAT_SLACK_S)
            measured += f"; 100 tenants {_ms(small)} ({cpu / small:.2f}x: {'flat' if flat else 'not flat'})"
        else:
            measured += "; no 100-tenant point in this run (flatness not judged)"
        res.goals.append(Goal("CPU per quiet refresh, 10,000 tenants; flat from 100 to 10,000 tenants", measured,
                              "<= 10 ms, flat", cpu <= 0.010 and flat is not False,
                              "" if flat is not None else "flatness needs a 100-tenant point"))
        res.goals.append(Goal("idle CPU of the real app, 10,000 tenants", f"{r[f'idle:{key}'] * 100:.1f}% of a core",
                              "< 2%", r[f"idle:{key}"] < 0.02))
        if f"settle:{key}" in r:
            res.goals.append(Goal("10,000 tenants: first frame to idle (under 2% of a core)",
                                  f"{r[f'settle:{key}']:.0f} s", "<= 30 s", r[f"settle:{key}"] <= 30))
        if f"soak_rss:{key}" in r:
            minutes = r[f"soak_minutes:{key}"]
            res.goals.append(Goal(f"10,000 tenants: RSS after {minutes:.0f} min untouched (max over the soak)",
                                  f"{r[f'soak_rss:{key}'] / MIB:.0f} MiB (max {r[f'soak_max:{key}'] / MIB:.0f}; "
                                  f"{r[f'soak_first:{key}'] / MIB:.0f} when settled)",
                                  "< 150 MiB after an hour", r[f"soak_max:{key}"] < 150 * MIB,
                                  "" if minutes >= 60 else f"{minutes:.0f} min soaked: --soak-minutes 60 for the goal"))
    else:
        res.goals.append(Goal("CPU per quiet refresh, 10,000 tenants; flat from 100 to 10,000 tenants",
                              "not run; " + largest(lambda k: _ms(r[f"cpu:{k}"])), "<= 10 ms, flat", None,
                              "no 10,000-tenant scale point in this run"))
        res.goals.append(Goal("idle CPU of the real app, 10,000 tenants",
                              "not run; " + largest(lambda k: f"{r[f'idle:{k}'] * 100:.1f}% of a core"),
                              "< 2%", None, "no 10,000-tenant scale point in this run"))
    whole = [k for k in points if f"hf_all:{k}" in r]
    if whole:
        key = "10000x100000" if "10000x100000" in whole else whole[-1]
        tenants, jobs = (int(n) for n in key.split("x"))
        ratio = r[f"full:{key}"] / r[f"hf_all:{key}"]
        measured = (f"{_ms(r[f'full:{key}'])} = {ratio:.2f}x hf jobs ps -a --limit 0 ({_ms(r[f'hf_all:{key}'])})"
                    f" at {tenants:,} tenants, {jobs:,} jobs")
        if has("full", "hf_all"):
            measured += f"; {r['full'] / r['hf_all']:.2f}x at the start-up point"
        res.goals.append(Goal("whole list warm (every job known, the fleet derived) vs hf jobs ps -a --limit 0",
                              measured, "<= 0.3x hf jobs ps -a --limit 0", ratio <= 0.3,
                              "" if key == "10000x100000" else "no 10,000-tenant, 100,000-job point in this run"))
    elif has("full", "hf_all"):
        ratio = r["full"] / r["hf_all"]
        res.goals.append(Goal("whole list warm (every job known, the fleet derived) vs hf jobs ps -a --limit 0",
                              f"{_ms(r['full'])} = {ratio:.2f}x hf jobs ps -a --limit 0 ({_ms(r['hf_all'])}) "
                              "at the start-up point", "<= 0.3x hf jobs ps -a --limit 0", ratio <= 0.3,
                              "no scale point in this run"))
    deep = sorted((k for k in points if k.endswith("x100000")), key=lambda k: int(k.split("x")[0]))
    if deep:
        key = deep[0]
        res.goals.append(Goal(f"console RSS, 100,000 jobs ({int(key.split('x')[0]):,} tenants)",
                              f"{r[f'rss:{key}'] / MIB:.0f} MiB (peak {r[f'peak:{key}'] / MIB:.0f} MiB)",
                              "< 150 MiB", r[f"rss:{key}"] < 150 * MIB))
    else:
        res.goals.append(Goal("console RSS, 100,000 jobs",
                              "not run; " + largest(lambda k: f"{r[f'rss:{k}'] / MIB:.0f} MiB "
                                                    f"(peak {r[f'peak:{k}'] / MIB:.0f} MiB)"),
                              "< 150 MiB", None, "no 100,000-job scale point in this run"))
    widest = [k for k in deep if k.startswith("10000x")]
    if widest:
        key = widest[-1]
        peak, now = r[f"srv_peak:{key}"], r[f"srv_rss:{key}"]
        res.goals.append(Goal("embedded server RSS, 100,000 jobs and 10,000 schedules",
                              f"peak {peak / MIB:.0f} MiB (now {now / MIB:.0f} MiB)", "< 300 MiB",
                              peak < 300 * MIB))
    else:
        res.goals.append(Goal("embedded server RSS, 100,000 jobs and 10,000 schedules",
                              "not run; " + largest(lambda k: f"peak {r[f'srv_peak:{k}'] / MIB:.0f} MiB "
                                                    f"(now {r[f'srv_rss:{k}'] / MIB:.0f} MiB)"),
                              "< 300 MiB", None, "no 10,000-tenant, 100,000-job scale point in this run"))
    if has("log_ratio", "key_p99"):
        ok = r["log_ratio"] >= 2.0 and r["key_p99"] < 0.1
        res.goals.append(Goal("log lines/s through the TUI vs hf jobs logs -f; key-to-frame p99 while it streams",
                              f"{r['log_ratio']:.2f}x; p99 {_ms(r['key_p99'])} (n={r['key_n']:.0f})",
                              ">= 2x; p99 < 100 ms", ok))
    if "whatif:10000" in r:
        screen = r.get("whatif_screen")
        measured = f"p95 {r['whatif:10000'] * 1000:.1f} ms (per-tenant projection)"
        if screen is not None:
            measured += f"; the screen's recompute p95 {screen * 1000:.2f} ms"
        res.goals.append(Goal("what-if recompute, 10,000 tenants", measured, "p95 < 16 ms",
                              r["whatif:10000"] < 0.016 and (screen is None or screen < 0.016)))
    print("\nGoals", flush=True)
    for g in res.goals:
        print(f"  {g.name}: {g.measured} | goal {g.goal} | {_verdict(g)}", flush=True)


def _verdict(goal: Goal, markdown: bool = False) -> str:
    word = "not run" if goal.met is None else ("met" if goal.met else "missed")
    text = f"**{word}**" if markdown else word.upper() if word == "missed" else word
    return f"{text} ({goal.why})" if goal.why else text


# -- report --------------------------------------------------------------------------------------


def write_report(res: Results, info: dict[str, str], args: argparse.Namespace, elapsed: float) -> None:
    titles = {"startup": "Start-up (1,000 tenants, 10,000 jobs)", "imports": "Import-time profile",
              "scale": "Scale points", "logs": "Logs", "whatif": "What-if", "scripts": "Training scripts"}
    out = [START, "", f"Measured {time.strftime('%Y-%m-%d %H:%M %Z')} by `python benchmarks/run.py` "
           f"({elapsed / 60:.0f} min; scale points {args.scales}; {args.lines:,} log lines; medians of "
           f"{args.runs} runs).", "",
           f"- Machine: {info['cpu']}, {info['memory']} RAM, {info['os']}",
           f"- Python {info['python']}; {info['packages']}",
           f"- Load average at start: {info['load']} (a shared box: figures are noisy; the ratios are "
           "taken within this run)", ""]
    if res.goals:
        out += ["### Goals", "", "| Goal | Measured | Goal | Met |", "|---|---|---|---|"]
        for g in res.goals:
            out.append(f"| {g.name} | {g.measured} | {g.goal} | {_verdict(g, markdown=True)} |")
        out.append("")
    for section, title in titles.items():
        figs = [f for f in res.figures if f.section == section]
        if not figs:
            continue
        out += [f"### {title}", "", "| Figure | Console | Peer | Ratio | Goal |", "|---|---|---|---|---|"]
        for f in figs:
            goal = f.goal and (f"{f.goal} " + ("**met**" if f.met else "**missed**")
                               if f.met is not None else f.goal)
            out.append(f"| {f.name} | {f.value} | {f.peer} | {f.ratio} | {goal} |")
        out.append("")
        for note in res.notes.get(section, []):
            out += [f"- {note}"]
        if res.notes.get(section):
            out.append("")
    out.append(END)
    block = "\n".join(out)
    text = REPORT.read_text(encoding="utf-8") if REPORT.exists() else "# Benchmarks\n\n"
    if START in text and END in text:
        head, rest = text.split(START, 1)
        _, tail = rest.split(END, 1)
        text = head + block + tail
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    REPORT.write_text(text, encoding="utf-8")
    print(f"\nwrote {REPORT}")


def _scales(text: str) -> list[tuple[int, int]]:
    out = []
    for item in text.split(","):
        tenants, _, jobs = item.strip().partition("x")
        out.append((int(tenants), int(jobs)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="repetitions for medians (default 5)")
    parser.add_argument("--scales", default=DEFAULT_SCALES, help="TENANTSxJOBS,... (default %(default)s)")
    parser.add_argument("--base", default="1000x10000",
                        help="the scale point of start-up, imports and logs (default %(default)s)")
    parser.add_argument("--lines", type=int, default=1_000_000, help="log lines (default 1M)")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--soak-minutes", type=float, default=0.0,
                        help="at the largest scale point, sample the untouched console's RSS once a minute "
                             "for this long (the goal is judged at 60)")
    parser.add_argument("--only", default="startup,imports,scale,logs,whatif,scripts")
    parser.add_argument("--keep", type=Path, default=None,
                        help="seed into this folder and keep it (a second run reuses its seeds)")
    parser.add_argument("--no-write", action="store_true", help="print only, keep BENCHMARKS.md")
    args = parser.parse_args()
    compile_console()
    only = set(args.only.split(","))
    scales = _scales(args.scales)
    base_point = _scales(args.base)[0]
    started = time.monotonic()
    info = harness.machine()
    print(f"Machine: {info['cpu']}, {info['memory']}; load {info['load']}")
    res = Results()
    wide_server_needed = "whatif" in only and any(t >= 10_000 for t, _ in scales)
    with contextlib.ExitStack() as stack:
        root = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="console-bench-")))
        for tenants, jobs in scales:
            base = (tenants, jobs) == base_point
            wanted = ("scale" in only or (base and only & {"startup", "imports", "logs"})
                      or (wide_server_needed and tenants >= 10_000))
            if not wanted:
                continue
            ws = Workspace(root / f"{tenants}x{jobs}")
            if not (ws.data_dir / "server" / "jobs.sqlite3").exists():
                t0 = time.monotonic()
                seed_fleet(ws, tenants, jobs)
                res.note("scale", f"{_scale_name(tenants, jobs)}: seeded in {time.monotonic() - t0:.0f} s")
            server = SharedServer(ws).start()
            try:
                if base and "startup" in only:
                    bench_startup(res, ws, server, args.runs)
                if base and "imports" in only:
                    bench_imports(res, ws)
                if "scale" in only:
                    serve_whole_list(server)
                    bench_scale(res, ws, server, tenants, jobs, args.idle_seconds,
                                warm_runs=max(1, min(3, args.runs)), hf_runs=max(1, min(2, args.runs)),
                                soak_minutes=args.soak_minutes if (tenants, jobs) == scales[-1] else 0.0)
                if base and "logs" in only:
                    bench_logs(res, ws, server, args.lines)
                if wide_server_needed and tenants >= 10_000:
                    bench_whatif(res, [1_000, 10_000], server, runs=30)
                    wide_server_needed = False
            finally:
                server.stop()
    if "whatif" in only and not any(k.startswith("whatif:") for k in res.raw):
        bench_whatif(res, [1_000, 10_000], None)
    if "scripts" in only:
        bench_scripts(res, args.runs)
    judge(res)
    elapsed = time.monotonic() - started
    print(f"\ndone in {elapsed:.0f} s")
    if not args.no_write:
        write_report(res, info, args, elapsed)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    raise SystemExit(main())
