"""The console's performance suite: start-up, steady state at scale, logs, what-if — beside the peers.

    python benchmarks/run.py [--runs 5] [--lines 1000000] [--tenants 1000] [--jobs 10000]
                             [--no-write] [--only startup,imports,steady,logs,whatif,scripts]

Run on demand (not in CI). In a throwaway data folder it seeds an embedded Jobs server with
`--tenants` tenants' scheduled jobs (through the real API) and `--jobs` finished jobs (bulk, into
its SQLite store), serves it with a real `console serve` process on loopback, and measures:

1. start-up: process spawn to the first frame with the jobs table filled, for the real `console`
   in an 80x24 pseudo-terminal (the app stamps `$CONSOLE_BENCH_READY_FILE` right after that frame
   is painted), beside `hf jobs ps -a` (and `--limit 0`) against the same server; the import-time
   profile (`python -X importtime`) of the console's start path;
2. steady state: HTTP requests and CPU per refresh of the running app (in-process, headless, at
   100 and at `--tenants` tenants, to show requests do not grow with tenants), idle CPU and
   resident memory of the real console in its terminal with nothing changing;
3. logs: lines/s from a job's stdout through the real SSE stream and the log pane to the
   terminal, key-to-frame latency (a key sent to the pty until the frame showing its effect comes
   back) while the log streams, memory after `--lines` lines; beside `hf jobs logs --follow` on an
   identical job in the same kind of terminal;
4. what-if: recomputing a `--tenants`-tenant monthly projection after one assumption changes;
5. training scripts: process start to the VERDICT line for what `sft_lora.py` refuses before any
   heavy import (a Hub push without `HF_TOKEN`, a bad dataset) and for `validate_dataset.py` on a
   300-row JSONL (training/README.md: they answer "in well under a second").

It prints every figure (as a ratio against its peer where there is one) and rewrites the figures
section of BENCHMARKS.md (between the `figures` markers; the rest of the file is kept). Bounded
(a few minutes), loopback only; every process it starts is stopped by its id.
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
    median,
    p95,
    seed_fleet,
    start_console,
    wait_ready,
)

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "BENCHMARKS.md"
START, END = "<!-- figures:start -->", "<!-- figures:end -->"


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
class Results:
    figures: list[Figure] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)

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


# -- 1. start-up ----------------------------------------------------------------------------


_BARE_TEXTUAL_APP = """
import sys, time
import huggingface_hub.hf_api
from textual.app import App
from textual.widgets import DataTable, Footer

class Bare(App):
    def compose(self):
        yield DataTable()
        yield Footer()

    def on_mount(self):
        table = self.query_one(DataTable)
        table.add_columns("id", "tenant", "stage")
        for i in range(100):
            table.add_row(str(i), "t%04d" % i, "COMPLETED")
        self.call_after_refresh(self.stamp)

    def stamp(self):
        with open(sys.argv[1], "w") as out:
            out.write("%.6f\\n" % time.time())

Bare().run()
"""


def bench_startup(res: Results, ws: Workspace, server: SharedServer, runs: int) -> None:
    print("\n1. Start-up", flush=True)
    ready = ws.root / "ready"
    times, full = [], []
    for _ in range(runs + 1):
        proc = start_console(ws, ready)
        try:
            times.append(wait_ready(proc, ready))
            full.append(harness.wait_full(proc, ready))
        finally:
            proc.close()
    times, full = times[1:], full[1:]  # the first run warms the page cache
    quits = []
    for _ in range(runs):
        # `q` right after the first frame, while the whole job list is still being read
        proc = start_console(ws, ready)
        try:
            wait_ready(proc, ready)
            t_q = time.perf_counter()
            proc.send(b"q")
            while proc.alive() and time.perf_counter() - t_q < 30:
                time.sleep(0.01)
            quits.append(time.perf_counter() - t_q)
        finally:
            proc.close()
    env = server.hf_env()
    hf_ps = [_run_wall([str(HF_BIN), "jobs", "ps", "-a"], env) for _ in range(runs)]
    hf_all = [_run_wall([str(HF_BIN), "jobs", "ps", "-a", "--limit", "0"], env) for _ in range(runs)]
    py = sys.executable
    bare = [_run_wall([py, "-c", "pass"], env) for _ in range(runs)]
    libs = [_run_wall([py, "-c", "import textual.app, huggingface_hub.hf_api"], env)
            for _ in range(runs)]
    bare_app = []
    for _ in range(runs):
        stamp = ws.root / "bare-ready"
        with contextlib.suppress(FileNotFoundError):
            stamp.unlink()
        proc = PtyProcess([py, "-c", _BARE_TEXTUAL_APP, str(stamp)], ws.env()).spawn()
        try:
            bare_app.append(wait_ready(proc, stamp))
        finally:
            proc.close()
    ours, peer = median(times), median(hf_ps)
    res.add("startup", "console: spawn to first frame with the jobs table filled",
            f"{_ms(ours)} median of {runs} (min {_ms(min(times))}, max {_ms(max(times))})",
            peer=f"hf jobs ps -a {_ms(peer)}",
            ratio=f"{ours / peer:.2f}x hf's wall time",
            goal="< 0.5 x hf and < 500 ms", met=ours < 0.5 * peer and ours < 0.5)
    res.add("startup", "console: spawn to the whole job list in the table (and the fleet derived)",
            _ms(median(full)), peer=f"hf jobs ps -a --limit 0 {_ms(median(hf_all))}",
            ratio=f"{median(full) / median(hf_all):.2f}x")
    res.add("startup", "q at the first frame, while the whole list is read, to the process exit",
            f"{_ms(median(quits))} median of {runs} (max {_ms(max(quits))})")
    res.add("startup", "hf jobs ps -a --limit 0 (all rows printed)", _ms(median(hf_all)),
            ratio=f"console at {ours / median(hf_all):.2f}x")
    res.add("startup", "floor: python -c pass", _ms(median(bare)))
    res.add("startup", "floor: python -c 'import textual.app, huggingface_hub.hf_api'",
            _ms(median(libs)))
    res.add("startup", "floor: a bare Textual app (one 100-row DataTable, hf imported) to its first frame",
            _ms(median(bare_app)))


def bench_imports(res: Results, ws: Workspace, top: int = 12) -> None:
    print("\n1b. Import-time profile of the start path", flush=True)
    code = ("import console.cli, console.commands, console.commands.tui, console.backend, "
            "console.config, console.ui.app")
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
    top_level = sorted((r for r in rows if r[2] == 0), key=lambda r: -r[1])[:top]
    own = sorted(rows, key=lambda r: -r[0])[:top]
    res.add("imports", "all imports of the start path (self times summed)",
            f"{total / 1000:.0f} ms, {len(rows)} modules")
    heavy = [r[3] for r in rows if r[3].split(".")[0] in ("torch", "trl", "peft", "datasets",
                                                          "trackio", "transformers")]
    res.add("imports", "training stack / trackio imported at start", ", ".join(heavy) or "none",
            goal="none", met=not heavy)
    res.note("imports", "top-level imports by cumulative time: " + ", ".join(
        f"{name} {cum / 1000:.0f} ms" for _, cum, _, name in top_level))
    res.note("imports", "modules by own time: " + ", ".join(
        f"{name} {own_us / 1000:.1f} ms" for own_us, _, _, name in own))


# -- 2. steady state ---------------------------------------------------------------------------


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
    """Run ConsoleApp headless at 80x24 against the running server; per-refresh requests and CPU."""
    from console.backend import connect
    from console.config import load
    from console.ui.app import ConsoleApp

    counter = _RequestCounter()
    cfg = load(None)
    backend = connect(cfg, start=False)
    counter.install()
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    out: dict[str, float] = {}
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            t0 = time.monotonic()
            while app.refresher.refresh_count < 1 and time.monotonic() - t0 < 60:
                await asyncio.sleep(0.01)
            out["first_refresh_s"] = time.monotonic() - t0
            await asyncio.sleep(1.0)  # let the first refresh's follow-ups (log stream...) settle
            out["first_requests"] = counter.count
            while not app.refresher.synced and time.monotonic() - t0 < 120:
                await asyncio.sleep(0.01)  # steady state: after the whole list has been read once
            # and after its one-off follow-ups (the ledger records every finished job once)
            await asyncio.sleep(5.0)
            base_n, base_req, base_cpu = app.refresher.refresh_count, counter.count, time.process_time()
            counter.paths.clear()
            while app.refresher.refresh_count < base_n + refreshes and time.monotonic() - t0 < 120:
                await asyncio.sleep(0.01)
            n = app.refresher.refresh_count - base_n
            out["requests"] = (counter.count - base_req) / max(1, n)
            out["cpu_s"] = (time.process_time() - base_cpu) / max(1, n)
            out["paths"] = dict(counter.paths)  # type: ignore[assignment]
            out["rows"] = app.jobs_table.row_count
            out["tenants"] = app.fleet_table.row_count
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
                          text=True, timeout=300)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("steady-state run failed:\n" + proc.stdout[-2000:] + proc.stderr[-3000:])


def bench_steady(res: Results, ws: Workspace, small: Workspace, seconds: float) -> None:
    import psutil

    print("\n2. Steady state", flush=True)
    big = _steady_in_subprocess(ws, 8)
    little = _steady_in_subprocess(small, 8)
    res.add("steady", f"HTTP requests per refresh, {big['tenants']:.0f} tenants "
            f"({big['rows']:.0f} rows in the jobs table)", f"{big['requests']:.1f}",
            peer=f"{little['tenants']:.0f} tenants: {little['requests']:.1f}",
            ratio=f"{big['requests'] / max(little['requests'], 1e-9):.2f}x for "
                  f"{big['tenants'] / max(little['tenants'], 1):.0f}x the tenants",
            goal="not growing with tenants",
            met=big["requests"] <= little["requests"] + 0.5)
    res.add("steady", "HTTP requests from start until 1 s after the first refresh",
            f"{big['first_requests']:.0f}", peer=f"{little['tenants']:.0f} tenants: "
            f"{little['first_requests']:.0f}",
            ratio=f"{big['first_requests'] / max(little['first_requests'], 1):.2f}x",
            goal="not growing with tenants",
            met=big["first_requests"] <= little["first_requests"] * 1.5 + 2)
    res.note("steady", f"requests by path ({big['tenants']:.0f} tenants, 8 refreshes): "
             + ", ".join(f"{p} {n}" for p, n in sorted(big["paths"].items())))
    res.add("steady", "CPU per refresh (app process, headless)", _ms(big["cpu_s"]),
            peer=f"{little['tenants']:.0f} tenants: {_ms(little['cpu_s'])}")

    ready = ws.root / "ready"
    proc = start_console(ws, ready)
    try:
        wait_ready(proc, ready)
        harness.wait_full(proc, ready)  # steady state: the whole job list has been read once
        ps = psutil.Process(proc.pid)
        time.sleep(3.0)  # settle: first refresh follow-ups, the log stream of the top job
        t0, c0 = time.monotonic(), ps.cpu_times()
        time.sleep(seconds)
        c1, t1 = ps.cpu_times(), time.monotonic()
        idle = (c1.user + c1.system - c0.user - c0.system) / (t1 - t0)
        rss = ps.memory_info().rss
    finally:
        proc.close()
    res.add("steady", f"idle CPU, nothing changing ({seconds:.0f} s, refresh every 2 s)",
            f"{idle * 100:.1f}% of a core", goal="< 2%", met=idle < 0.02)
    res.add("steady", "resident memory (RSS) of the console", f"{rss / 2**20:.0f} MiB",
            goal="< 150 MB", met=rss < 150e6)
    code = ("import psutil, time; p = psutil.Process(); a = p.memory_info().rss; "
            "t = time.perf_counter(); import trackio; "
            "print(p.memory_info().rss - a, time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    grown, took = (float(x) for x in out.stdout.split())
    res.add("steady", "added when Trackio metrics are first read (trackio imported; the seeded fleet "
            "has no Trackio store, so the console above never imports it)",
            f"+{grown / 2**20:.0f} MiB, {_ms(took)}")


# -- 3. logs -------------------------------------------------------------------------------------

_JOB_CODE = """
import os, sys, time
go = sys.argv[1]
print('bench-log-ready', flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
w = sys.stdout.write
for i in range(int(sys.argv[2])):
    w('step %d loss=0.%06d lr=5e-3 the quick brown fox jumps over the lazy dog\\n' % (i, i))
sys.stdout.flush()
"""


def _start_log_job(api, root: Path, name: str, lines: int) -> tuple[str, Path]:
    go = root / f"go-{name}"
    job = api.run_job(
        image="python:3.12",
        command=["python", "-c", _JOB_CODE, str(go), str(lines)],
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
    return job.id, go


def bench_logs(res: Results, ws: Workspace, server: SharedServer, lines: int) -> None:
    import psutil

    print("\n3. Logs", flush=True)
    api = server.api()
    ours_id, ours_go = _start_log_job(api, ws.root, "console", lines)
    ready = ws.root / "ready"
    proc = start_console(ws, ready)
    counts = re.compile(rb"(\d+)/(\d+) lines|\s(\d+) lines")
    latencies: list[float] = []
    try:
        wait_ready(proc, ready)
        harness.wait_full(proc, ready)  # the baseline holds the whole job list: count the log's own
        t_attach, _ = proc.wait_for(re.compile(rb"\b1 lines"), timeout=30)
        if t_attach is None:
            raise RuntimeError("the log pane did not attach to the job's stream")
        ps = psutil.Process(proc.pid)
        rss_before = ps.memory_info().rss
        time.sleep(0.5)
        proc.clear_output()
        t_go = time.perf_counter()
        ours_go.touch()
        received = 0
        t_last = t_go
        offset = 0
        next_probe = t_go + 0.5
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
                next_probe = time.perf_counter() + 0.4
        ours_s = t_last - t_go
        rss_after = ps.memory_info().rss
    finally:
        proc.close()
    ours_rate = lines / ours_s if received >= lines else received / ours_s

    peer_id, peer_go = _start_log_job(api, ws.root, "hf", lines)
    hf = PtyProcess([str(HF_BIN), "jobs", "logs", "--follow", peer_id], server.hf_env()).spawn()
    peak = 0
    try:
        t_seen, _ = hf.wait_for(b"bench-log-ready", timeout=30)
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
    res.add("logs", f"lines/s, job stdout -> SSE -> log pane -> terminal ({lines:,} lines)",
            f"{ours_rate:,.0f} lines/s ({received - 1:,} lines in {ours_s:.1f} s)",
            peer=f"hf jobs logs --follow {hf_rate:,.0f} lines/s ({hf_lines:,} in {hf_s:.1f} s)",
            ratio=f"{ours_rate / hf_rate:.2f}x hf")
    res.add("logs", "key-to-frame latency while the log streams",
            f"median {_ms(median(latencies))}, p95 {_ms(p95(latencies))}, max "
            f"{_ms(max(latencies) if latencies else float('nan'))} (n={len(latencies)})",
            goal="< 100 ms", met=bool(latencies) and p95(latencies) < 0.1)
    res.add("logs", f"console RSS after {lines:,} lines",
            f"{rss_after / 2**20:.0f} MiB ({(rss_after - rss_before) / 2**20:+.0f} MiB over the "
            "stream's start)",
            peer=f"hf jobs logs --follow peak {peak / 2**20:.0f} MiB",
            goal="bounded", met=rss_after - rss_before < 64 * 2**20)
    for job_id in (ours_id, peer_id):
        try:
            api.cancel_job(job_id=job_id, namespace=NAMESPACE)
        except Exception:  # already finished
            pass


# -- 4. what-if --------------------------------------------------------------------------------


def bench_whatif(res: Results, tenants: int, runs: int = 30) -> None:
    from dataclasses import replace

    from console.costs import RunSpec, Scenario, estimate_run, project, runs_per_month
    from console.prices import shipped_price_book

    print("\n4. What-if", flush=True)
    prices = shipped_price_book()
    fleet = [
        (RunSpec((1.0, 3.0, 7.0)[i % 3], 500 + (i * 37) % 4000, (1.0, 2.0, 3.0)[i % 3],
                 harness.FLAVORS[i % len(harness.FLAVORS)] if i % 3 != 2 else "a10g-large"),
         harness.CRONS[i % len(harness.CRONS)])
        for i in range(tenants)
    ]

    def projection(book, epochs_delta: float = 0.0) -> float:
        total = 0.0
        for spec, cron in fleet:
            if epochs_delta:
                spec = replace(spec, epochs=spec.epochs + epochs_delta)
            total += estimate_run(spec, book).cost_usd * runs_per_month(cron)
        return total

    projection(prices)  # warm the cron cache, as an open what-if pane would have
    l4 = prices.flavors["l4x1"]
    dearer = replace(prices, flavors={**prices.flavors,
                                      "l4x1": replace(l4, price_per_hour=l4.price_per_hour * 1.2)})
    price_times, epoch_times = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        projection(dearer)
        price_times.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        projection(prices, 1.0)
        epoch_times.append(time.perf_counter() - t0)
    scenario_times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        project(Scenario(tenants=tenants, cadence="weekly", run=RunSpec(3, 1000, 4, "l4x1")))
        scenario_times.append(time.perf_counter() - t0)
    res.add("whatif", f"per-tenant projection of {tenants:,} tenants, l4x1 price +20%",
            f"{median(price_times) * 1000:.2f} ms median, p95 {p95(price_times) * 1000:.2f} ms",
            goal="< 16 ms", met=p95(price_times) < 0.016)
    res.add("whatif", f"per-tenant projection of {tenants:,} tenants, epochs +1",
            f"{median(epoch_times) * 1000:.2f} ms median, p95 {p95(epoch_times) * 1000:.2f} ms",
            goal="< 16 ms", met=p95(epoch_times) < 0.016)
    res.add("whatif", f"costs.project(Scenario(tenants={tenants})), epochs changed",
            f"{median(scenario_times) * 1000:.3f} ms median", goal="< 16 ms",
            met=p95(scenario_times) < 0.016)


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
            for _ in range(runs):
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, *argv], env=env, capture_output=True,
                                      text=True, timeout=120)
                times.append(time.perf_counter() - t0)
                last = (proc.stdout.strip().splitlines() or [""])[-1]
                if not last.startswith(verdict):
                    raise RuntimeError(f"{name}: ended {last!r}, not {verdict!r}")
            res.add("scripts", f"{name}: start to VERDICT line",
                    f"median {_ms(median(times))}, p95 {_ms(p95(times))}", goal="< 1 s",
                    met=p95(times) < 1.0)


# -- report -------------------------------------------------------------------------------------


def write_report(res: Results, info: dict[str, str], args: argparse.Namespace,
                 elapsed: float) -> None:
    titles = {"startup": "Start-up", "imports": "Import-time profile",
              "steady": "Steady state at scale", "logs": "Logs", "whatif": "What-if",
              "scripts": "Training scripts"}
    out = [START, "", f"Measured {time.strftime('%Y-%m-%d %H:%M %Z')} by `python benchmarks/run.py` "
           f"({elapsed:.0f} s; {args.tenants:,} tenants, {args.jobs:,} jobs, {args.lines:,} log "
           f"lines, medians of {args.runs} runs).", "",
           f"- Machine: {info['cpu']}, {info['memory']} RAM, {info['os']}",
           f"- Python {info['python']}; {info['packages']}",
           f"- Load average at start: {info['load']} (a shared box: figures are noisy)", ""]
    for section, title in titles.items():
        figs = [f for f in res.figures if f.section == section]
        if not figs:
            continue
        out += [f"### {title}", "", "| Figure | Console | Peer | Ratio | Goal |",
                "|---|---|---|---|---|"]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="repetitions for medians (default 5)")
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=1_000_000, help="log lines (default 1M)")
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--only", default="startup,imports,steady,logs,whatif,scripts")
    parser.add_argument("--no-write", action="store_true", help="print only, keep BENCHMARKS.md")
    args = parser.parse_args()
    only = set(args.only.split(","))
    started = time.monotonic()
    info = harness.machine()
    print(f"Machine: {info['cpu']}, {info['memory']}; load {info['load']}")
    res = Results()
    if only & {"startup", "imports", "steady", "logs"}:  # the sections that need a seeded server
        with tempfile.TemporaryDirectory(prefix="console-bench-") as tmp:
            root = Path(tmp)
            ws = Workspace(root / "big")
            small = Workspace(root / "small")
            t0 = time.monotonic()
            seed_fleet(ws, args.tenants, args.jobs)
            if "steady" in only:
                seed_fleet(small, max(1, args.tenants // 10), args.jobs)
            print(f"seeded {args.tenants:,} tenants and {args.jobs:,} jobs in "
                  f"{time.monotonic() - t0:.1f} s", flush=True)
            server = SharedServer(ws).start()
            small_server = SharedServer(small).start() if "steady" in only else None
            try:
                if "startup" in only:
                    bench_startup(res, ws, server, args.runs)
                if "imports" in only:
                    bench_imports(res, ws)
                if "steady" in only:
                    bench_steady(res, ws, small, args.idle_seconds)
                if "logs" in only:
                    bench_logs(res, ws, server, args.lines)
            finally:
                server.stop()
                if small_server is not None:
                    small_server.stop()
    if "whatif" in only:
        bench_whatif(res, args.tenants)
    if "scripts" in only:
        bench_scripts(res, args.runs)
    elapsed = time.monotonic() - started
    print(f"\ndone in {elapsed:.0f} s")
    if not args.no_write:
        write_report(res, info, args, elapsed)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    raise SystemExit(main())
