"""The embedded server's local Hub at scale, beside its floors, with every goal met or missed.

    python benchmarks/bench_hub.py [--files 3000,10000] [--heads 200] [--runs 3] [--write]

Seeds, through huggingface_hub against a real `console serve` process on loopback, a model repo
of 1 file and one of each `--files` count (small text files, 100 to a folder, one commit), and
measures, interleaved so that the machine's load falls on both sides alike:

1. HEAD of one file's resolve URL (what `hf_hub_download` asks first) in each repo, round-robin,
   `--heads` times each after one warm-up: the median at N files against the median at 1 file.
   paths-info of one path and the tree of one folder are measured the same way (figures only).
2. `snapshot_download` of the repo of the first `--files` count, beside the same files fetched
   from a static `ThreadingHTTPServer` (`python -m http.server`) with 8 client threads (what
   `snapshot_download` uses), alternating, `--runs` times each, into fresh folders; with the CPU
   time the client (this process) and each server spent on them. In turn with them, the client's own
   floor: the same `snapshot_download` against `replay_server.py`, a `ThreadingHTTPServer` in its own
   process answering from memory what the console answered to one recorded `snapshot_download`.
3. One file of `--big-mb` MB (fresh random bytes each run): `HfApi.upload_file`, then `sync`, beside
   `cp` of the same bytes to a fresh file and `sync`, then `hf_hub_download` of it into a fresh cache beside
   `cp` + `sync` of the same bytes again, alternating, `--big-runs` times each (0 MB: skipped).

It prints every figure and a table of the goals (measured / goal / met). With `--write` it puts
them in BENCHMARKS.md between the `hub-figures` markers. Every process it starts is stopped by its
id. At the defaults, a few minutes on a two-core box (most of it seeding 10,000 files).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import functools
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import SharedServer, Workspace, median  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "BENCHMARKS.md"
START, END = "<!-- hub-figures:start -->", "<!-- hub-figures:end -->"
HEAD_RATIO = 1.5
SNAPSHOT_RATIO = 3.0
DOWNLOAD_RATIO = 2.0
UPLOAD_RATIO = 4.0
MB = 10**6
THREADS = 8


def _path(i: int) -> str:
    return f"data/{i // 100:04d}/file-{i:05d}.txt"


def _seed(api, repo_id: str, count: int, root: Path | None) -> None:
    from huggingface_hub import CommitOperationAdd

    api.create_repo(repo_id)
    ops = []
    for i in range(count):
        data = f"file {i} of {count}\n".encode() * 8
        ops.append(CommitOperationAdd(path_in_repo=_path(i), path_or_fileobj=data))
        if root is not None:
            target = root / _path(i)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    api.create_commit(repo_id, operations=ops, commit_message=f"{count} files")


def _timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _static_server(root: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(root)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    import httpx

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            httpx.get(url + "/", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the static server did not start")


def _fetch_static(url: str, names: list[str], dest: Path) -> None:
    import httpx

    with httpx.Client(timeout=60, limits=httpx.Limits(max_connections=THREADS)) as client:
        def one(name: str) -> None:
            body = client.get(f"{url}/{name}").raise_for_status().content
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)

        with concurrent.futures.ThreadPoolExecutor(THREADS) as pool:
            list(pool.map(one, names))


def _record(server: SharedServer, repo_id: str, cache: Path) -> dict:
    """The console server's answers to every request of one `snapshot_download` of `repo_id` (the
    requests as huggingface_hub sends them, read off its session), for `replay_server.py`."""
    import httpx
    from huggingface_hub import snapshot_download
    from huggingface_hub.utils import get_session

    sent: list[tuple[str, str]] = []
    hooks = get_session().event_hooks["request"]
    hook = lambda request: sent.append((request.method, request.url.raw_path.decode()))  # noqa: E731
    hooks.append(hook)
    try:
        snapshot_download(repo_id, endpoint=server.url, token=server.token, cache_dir=cache, max_workers=THREADS)
    finally:
        hooks.remove(hook)
    answers = {}
    skip = {"date", "server", "connection", "transfer-encoding", "content-encoding"}
    with httpx.Client(base_url=server.url, headers={"authorization": f"Bearer {server.token}"}, timeout=60) as client:
        for method, path in sent:
            got = client.request(method, path)
            answers[(method, path)] = (got.status_code, [(k, v) for k, v in got.headers.items() if k not in skip],
                                       got.content)
    return answers


def _replay_server(answers: dict, tmp: Path) -> tuple[subprocess.Popen, str]:
    """`replay_server.py` in its own process, answering from memory what the console answered."""
    import pickle

    (tmp / "answers.pickle").write_bytes(pickle.dumps(answers))
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("replay_server.py")),
                             str(tmp / "answers.pickle"), str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return proc, f"http://127.0.0.1:{port}"
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the replay server did not start")


@contextlib.contextmanager
def _cpu_of(into: dict[str, list[float]], prefix: str, server_pid: int):
    """CPU seconds (user + system) this process (the client) and the server process spend inside the block."""
    import psutil

    def used(proc) -> float:
        times = proc.cpu_times()
        return times.user + times.system

    me, server = psutil.Process(), psutil.Process(server_pid)
    mine, theirs = used(me), used(server)
    yield
    into[f"{prefix} client".strip()].append(used(me) - mine)
    into[f"{prefix} server".strip()].append(used(server) - theirs)


def _fresh_bytes(path: Path, size: int) -> None:
    """`size` random bytes (never seen by the server: nothing to deduplicate) written and synced."""
    with open(path, "wb") as out:
        left = size
        while left:
            chunk = min(left, 8 * 2**20)
            out.write(os.urandom(chunk))
            left -= chunk
        out.flush()
        os.fsync(out.fileno())


def _cp_sync(src: Path, dest: Path) -> None:
    """The floor: `cp` of the bytes to a fresh file, and `sync` (what a download or upload that is
    on disk when it returns has to do at the least)."""
    subprocess.run(["cp", str(src), str(dest)], check=True)
    subprocess.run(["sync"], check=True)


def _upload_synced(api, src: Path, name: str, repo_id: str) -> None:
    """`HfApi.upload_file`, then `sync`: the server's writes reach the disk on the upload's clock,
    as the floor's do (not on the next download's)."""
    api.upload_file(path_or_fileobj=str(src), path_in_repo=name, repo_id=repo_id)
    subprocess.run(["sync"], check=True)


def _download_synced(repo_id: str, name: str, server: SharedServer, cache: Path, size: int) -> None:
    from huggingface_hub import hf_hub_download

    got = hf_hub_download(repo_id, name, endpoint=server.url, token=server.token, cache_dir=cache)
    subprocess.run(["sync"], check=True)
    if os.path.getsize(got) != size:
        raise RuntimeError(f"hf_hub_download gave {os.path.getsize(got)} bytes of {size}")


def bench_big_file(api, server: SharedServer, tmp: Path, mb: int, runs: int, say, goals: list) -> None:
    """One big file up and down, each beside `cp` + `sync` of the same fresh bytes, alternating."""
    from harness import NAMESPACE

    repo_id = f"{NAMESPACE}/hub-big"
    api.create_repo(repo_id)
    size = mb * MB
    up, up_floor, down, down_floor = [], [], [], []
    for run in range(runs):
        src = tmp / f"big-{run}.bin"
        _fresh_bytes(src, size)
        name = f"big-{run}.bin"
        up_floor.append(_timed(_cp_sync, src, tmp / f"big-cp-up-{run}.bin"))
        up.append(_timed(_upload_synced, api, src, name, repo_id))
        (tmp / f"big-cp-up-{run}.bin").unlink()
        cache = tmp / f"big-cache-{run}"
        down.append(_timed(_download_synced, repo_id, name, server, cache, size))
        down_floor.append(_timed(_cp_sync, src, tmp / f"big-cp-down-{run}.bin"))
        for path in (src, tmp / f"big-cp-down-{run}.bin"):
            path.unlink()
        subprocess.run(["rm", "-rf", str(cache)], check=True)
    for what, hub, floor, ratio_goal in (("upload (`HfApi.upload_file`, then `sync`)", up, up_floor, UPLOAD_RATIO),
                                         ("download (`hf_hub_download`, then `sync`)", down, down_floor,
                                          DOWNLOAD_RATIO)):
        ratios = [h / f for h, f in zip(hub, floor, strict=True)]
        say(f"- {mb:,} MB {what}: {median(hub):.2f} s median of {runs} ({', '.join(f'{t:.2f}' for t in hub)}); "
            f"{mb / median(hub):.0f} MB/s; `cp` + `sync` of the same bytes, in turn with each: {median(floor):.2f} s "
            f"({', '.join(f'{t:.2f}' for t in floor)}); {median(ratios):.2f}x "
            f"({min(ratios):.2f}-{max(ratios):.2f}x)")
        goals.append((f"a {mb:,} MB {what.split(' (')[0]} vs `cp` + `sync` of the same fresh bytes",
                      f"{median(hub):.2f} s = {median(ratios):.2f}x ({median(floor):.2f} s; "
                      f"{min(ratios):.2f}-{max(ratios):.2f}x)", f"<= {ratio_goal:g}x", median(ratios) <= ratio_goal))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", default="3000,10000", help="file counts of the big repos (comma-separated)")
    parser.add_argument("--heads", type=int, default=200, help="HEADs per repo")
    parser.add_argument("--runs", type=int, default=3, help="snapshot_download runs (and static runs)")
    parser.add_argument("--big-mb", type=int, default=200, help="the big file's size in MB (0: skip it)")
    parser.add_argument("--big-runs", type=int, default=3, help="uploads and downloads of the big file")
    parser.add_argument("--write", action="store_true", help="record the figures in BENCHMARKS.md")
    args = parser.parse_args()
    counts = [int(c) for c in args.files.split(",") if c.strip()]
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    import httpx
    from huggingface_hub import snapshot_download

    tmp = Path(tempfile.mkdtemp(prefix="console-bench-hub-"))
    ws = Workspace(tmp)
    ws.write_config()
    server = SharedServer(ws).start()
    static_proc = replay_proc = None
    lines: list[str] = []
    goals: list[tuple[str, str, str, bool]] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    try:
        api = server.api()
        from harness import NAMESPACE

        repos = {1: f"{NAMESPACE}/hub-1"}
        started = time.perf_counter()
        _seed(api, repos[1], 1, None)
        static_root = tmp / "static"
        for n in counts:
            repos[n] = f"{NAMESPACE}/hub-{n}"
            _seed(api, repos[n], n, static_root / str(n) if n == counts[0] else None)
        say(f"- seeded repos of 1, {', '.join(f'{n:,}' for n in counts)} files in {time.perf_counter() - started:.0f} s"
            f" (one commit each, through `HfApi.create_commit`)")

        auth = {"authorization": f"Bearer {server.token}"}
        with httpx.Client(base_url=server.url, headers=auth, timeout=60) as client:
            probes = {
                "HEAD": lambda repo: client.head(f"/{repo}/resolve/main/{_path(0)}").raise_for_status(),
                "paths-info": lambda repo: client.post(f"/api/models/{repo}/paths-info/main",
                                                       data={"paths": _path(0)}).raise_for_status(),
                "tree of a folder (1 entry at 1 file, 100 above)":
                    lambda repo: client.get(f"/api/models/{repo}/tree/main/data/0000").raise_for_status(),
            }
            for what, probe in probes.items():
                times: dict[int, list[float]] = {n: [] for n in repos}
                for repo in repos.values():
                    probe(repo)  # the commit's first read: parsed once, then kept
                for _ in range(args.heads):
                    for n, repo in repos.items():
                        times[n].append(_timed(probe, repo))
                base = median(times[1])
                for n in repos:
                    say(f"- {what} at {n:,} files: {median(times[n]) * 1000:.2f} ms median of {args.heads}"
                        + ("" if n == 1 else f" ({median(times[n]) / base:.2f}x 1 file)"))
                if what == "HEAD":
                    for n in counts:
                        ratio = median(times[n]) / base
                        goals.append((f"HEAD of a resolve URL at {n:,} files vs at 1 file",
                                      f"{median(times[n]) * 1000:.2f} ms = {ratio:.2f}x ({base * 1000:.2f} ms)",
                                      f"<= {HEAD_RATIO}x", ratio <= HEAD_RATIO))

        n = counts[0]
        names = [_path(i) for i in range(n)]
        static_proc, static_url = _static_server(static_root / str(n))
        replay_proc, replay_url = _replay_server(_record(server, repos[n], tmp / "cache-recorded"), tmp)
        hub_times, static_times, replay_times = [], [], []
        cpu: dict[str, list[float]] = {"client": [], "server": [], "static client": [], "static server": []}
        for run in range(args.runs):
            dest = tmp / f"static-{run}"
            with _cpu_of(cpu, "static", static_proc.pid):
                static_times.append(_timed(_fetch_static, static_url, names, dest))
            cache = tmp / f"cache-{run}"
            fetch = functools.partial(snapshot_download, repos[n], endpoint=server.url, token=server.token,
                                      cache_dir=cache, max_workers=THREADS)
            with _cpu_of(cpu, "", server.proc.pid):
                hub_times.append(_timed(fetch))
            replay_cache = tmp / f"replay-cache-{run}"
            replay_times.append(_timed(functools.partial(
                snapshot_download, repos[n], endpoint=replay_url, token=server.token, cache_dir=replay_cache,
                max_workers=THREADS)))
            for folder in (cache, replay_cache):
                got = sum(1 for _ in folder.rglob("file-*.txt"))
                if got != n:
                    raise RuntimeError(f"snapshot_download gave {got} files of {n}")
        hub, static = median(hub_times), median(static_times)
        say(f"- snapshot_download of {n:,} small files: {hub:.2f} s median of {args.runs} "
            f"({', '.join(f'{t:.2f}' for t in hub_times)}); {n / hub:.0f} files/s")
        say(f"- the same files from a static ThreadingHTTPServer, {THREADS} client threads: {static:.2f} s median "
            f"of {args.runs} ({', '.join(f'{t:.2f}' for t in static_times)}); {n / static:.0f} files/s")
        replay = median(replay_times)
        say(f"- the client's own floor: snapshot_download of the same repo from a ThreadingHTTPServer replaying the "
            f"console's recorded answers from memory (its own process, HTTP/1.1 keep-alive), in turn with each: "
            f"{replay:.2f} s median of {args.runs} ({', '.join(f'{t:.2f}' for t in replay_times)}); "
            f"{replay / static:.2f}x the static server; the console {hub / replay:.2f}x it")
        say(f"- CPU seconds (median; user + system), snapshot_download: client {median(cpu['client']):.2f}, server "
            f"{median(cpu['server']):.2f} ({median(cpu['server']) / n * 1e6:.0f} us per file); the static fetch: "
            f"client {median(cpu['static client']):.2f}, server {median(cpu['static server']):.2f} (CPU time, "
            f"which a busy machine stretches less than the wall clock)")
        goals.append((f"snapshot_download of {n:,} small files vs a static HTTP server of the same files",
                      f"{hub:.2f} s = {hub / static:.2f}x ({static:.2f} s)", f"<= {SNAPSHOT_RATIO}x",
                      hub / static <= SNAPSHOT_RATIO))
        if args.big_mb > 0:
            bench_big_file(api, server, tmp, args.big_mb, args.big_runs, say, goals)
    finally:
        for proc in (static_proc, replay_proc):
            if proc is not None:
                proc.terminate()
                proc.wait(10)
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)  # the seeded repos, caches and copies: hundreds of MB

    load = os.getloadavg()[0]
    table = ["| Goal | Measured | Goal | Met |", "|---|---|---|---|"]
    table += [f"| {g} | {m} | {want} | **{'met' if ok else 'missed'}** |" for g, m, want, ok in goals]
    print("\n".join(["", *table]))
    if args.write:
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        block = "\n".join([
            START, "",
            f"Measured {stamp} by `python benchmarks/bench_hub.py {' '.join(sys.argv[1:])}` "
            f"(load average {load:.1f} at the end).", "", *table, "", *lines, "", END])
        text = REPORT.read_text(encoding="utf-8")
        text = re.sub(re.escape(START) + ".*?" + re.escape(END), lambda _m: block, text, flags=re.DOTALL)
        REPORT.write_text(text, encoding="utf-8")
    return 0 if all(ok for *_, ok in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
