"""Benchmark of the embedded Jobs server, through huggingface_hub.HfApi and the `hf` CLI.

    python benchmarks/bench_server.py [--jobs 10000] [--lines 200000] [--submits 20]

Measures, in a throwaway data folder with its own server on a free port:

1. submit -> RUNNING: `HfApi.run_job` until the job's process is running (the job prints its
   own start time), and the wall time of `hf jobs run --detach` beside it;
2. log lines/s delivered by `fetch_job_logs(follow=True)` while a job prints N lines, the replay
   rate of the finished job's log, and `hf jobs logs` (replay) beside it;
3. `list_jobs` with 10,000 jobs in history (all, and filtered by a label), beside
   `hf jobs ps -a --limit 0` and the default `hf jobs ps`.

It prints a table; it is not a test and asserts nothing. A couple of minutes at most.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _p95(values: list[float]) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs in history for list_jobs")
    parser.add_argument("--lines", type=int, default=200_000, help="log lines for the log test")
    parser.add_argument("--submits", type=int, default=20, help="jobs for the submit latency")
    args = parser.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="console-bench-")
    os.environ["CONSOLE_DATA_DIR"] = tmp.name
    os.environ.pop("CONSOLE_SERVER_TOKEN", None)
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

    from huggingface_hub import HfApi

    from console.server import LocalServer, ServerOptions
    from console.server.core import new_id
    from console.server.jobs.store import JobRecord

    ns = "bench"
    hf_bin = Path(sys.executable).parent / "hf"
    rows: list[tuple[str, str, str]] = []

    with LocalServer(ServerOptions(namespace=ns, max_running_jobs=4)) as server:
        api = HfApi(endpoint=server.url, token=server.token)
        cli_env = dict(os.environ, HF_ENDPOINT=server.url, HF_TOKEN=server.token, NO_COLOR="1")

        def hf(*cli_args: str) -> tuple[float, str]:
            t0 = time.perf_counter()
            proc = subprocess.run([str(hf_bin), *cli_args], env=cli_env, capture_output=True,
                                  text=True, check=True)
            return time.perf_counter() - t0, proc.stdout

        def wait_done(job_id: str) -> None:
            api.wait_for_job(job_id, poll_interval=0.02, namespace=ns)

        # 1. submit -> RUNNING ------------------------------------------------------------
        api.wait_for_job(api.run_job(image="python:3.12", command=["true"], namespace=ns).id,
                         poll_interval=0.02, namespace=ns)  # warm-up
        to_running: list[float] = []
        to_process: list[float] = []
        for _ in range(args.submits):
            t0 = time.time()
            job = api.run_job(image="python:3.12", namespace=ns,
                              command=["python", "-c", "import time; print(time.time())"])
            stage = job.status.stage
            while stage != "RUNNING" and stage not in ("COMPLETED", "ERROR", "CANCELED"):
                stage = api.inspect_job(job_id=job.id, namespace=ns).status.stage
            to_running.append(time.time() - t0)
            wait_done(job.id)
            printed = float(next(iter(api.fetch_job_logs(job_id=job.id, namespace=ns))))
            to_process.append(printed - t0)
        cli_submit = [hf("jobs", "run", "-q", "--detach", "python:3.12", "true")[0]
                      for _ in range(3)]
        rows.append(("submit -> RUNNING (HfApi.run_job answer)",
                     f"median {_median(to_running) * 1000:.0f} ms, "
                     f"p95 {_p95(to_running) * 1000:.0f} ms (n={args.submits})",
                     f"hf jobs run --detach: {_median(cli_submit):.2f} s wall (CLI start-up)"))
        rows.append(("submit -> job's first instruction runs",
                     f"median {_median(to_process) * 1000:.0f} ms "
                     f"(incl. Python start-up)", ""))

        # 2. log lines/s ----------------------------------------------------------------------
        code = (
            "import sys\nw = sys.stdout.write\n"
            f"for i in range({args.lines}):\n    w('log line %d of the benchmark\\n' % i)\n"
        )
        t0 = time.perf_counter()
        job = api.run_job(image="python:3.12", command=["python", "-c", code], namespace=ns)
        n = sum(1 for _ in api.fetch_job_logs(job_id=job.id, follow=True, namespace=ns))
        live = time.perf_counter() - t0
        t0 = time.perf_counter()
        n_replay = sum(1 for _ in api.fetch_job_logs(job_id=job.id, namespace=ns))
        replay = time.perf_counter() - t0
        cli_logs, out = hf("jobs", "logs", job.id)
        cli_lines = out.count("\n")
        rows.append(("log lines/s, fetch_job_logs(follow=True) live",
                     f"{n / live:,.0f} lines/s ({n:,} lines in {live:.2f} s, submit to last)",
                     ""))
        rows.append(("log lines/s, replay of a finished job",
                     f"{n_replay / replay:,.0f} lines/s ({n_replay:,} in {replay:.2f} s)",
                     f"hf jobs logs: {cli_lines / cli_logs:,.0f} lines/s "
                     f"({cli_lines:,} in {cli_logs:.2f} s wall)"))

        # 3. list_jobs with a long history ------------------------------------------------
        existing = sum(1 for _ in api.list_jobs(namespace=ns))
        spec = {"dockerImage": "python:3.12", "command": ["python", "train.py"], "arguments": [],
                "environment": {"EPOCHS": "3"}, "flavor": "l4x1", "timeoutSeconds": 3600,
                "attempts": 1, "labels": {}, "ssh": False, "tags": []}
        now = time.time() - 86400 * 30
        fill = max(0, args.jobs - existing)
        server.service.store.insert_jobs_bulk(
            JobRecord(
                id=new_id(), namespace=ns, created_at=now + i * 60, stage="COMPLETED", spec=spec,
                labels={"app": "console", "tenant": f"t{i % 50}", "env": "prod", "kind": "sft"},
                started_at=now + i * 60 + 5, finished_at=now + i * 60 + 900,
            )
            for i in range(fill)
        )
        total = existing + fill
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            count = sum(1 for _ in api.list_jobs(namespace=ns))
            times.append(time.perf_counter() - t0)
        assert count == total
        label_times = []
        for _ in range(3):
            t0 = time.perf_counter()
            n_label = sum(1 for _ in api.list_jobs(labels={"tenant": "t7"}, namespace=ns))
            label_times.append(time.perf_counter() - t0)
        cli_all, out = hf("jobs", "ps", "-a", "--limit", "0", "-q")
        cli_running, _ = hf("jobs", "ps")
        rows.append((f"list_jobs, {total:,} jobs in history",
                     f"{_median(times) * 1000:.0f} ms (all {count:,})",
                     f"hf jobs ps -a --limit 0: {cli_all:.2f} s wall "
                     f"({out.count(chr(10)):,} rows)"))
        rows.append(("list_jobs(labels={'tenant': 't7'})",
                     f"{_median(label_times) * 1000:.0f} ms ({n_label:,} jobs, filtered in SQL)",
                     f"hf jobs ps (running only): {cli_running:.2f} s wall"))

    width = max(len(r[0]) for r in rows)
    print(f"Embedded Jobs server benchmark ({os.cpu_count()} CPUs, Python "
          f"{sys.version.split()[0]})\n")
    for name, ours, cli in rows:
        print(f"{name:<{width}}  {ours}")
        if cli:
            print(f"{'':<{width}}    beside: {cli}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
