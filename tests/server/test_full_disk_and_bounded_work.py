"""A full disk loses nothing and blocks nothing; every request does bounded work.

The full disk is real where this machine allows it (a 3 MB tmpfs mounted under the data folder);
`/dev/full` stands in for it otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest
from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, fill_disk, make_server, mount_tmpfs, wait_stage

from console.server import paths
from console.server.app import MAX_BODY_BYTES, tail_lines
from console.server.host import runner
from console.server.host.runner import DISK_FULL_MESSAGE
from console.server.jobs.joblog import append_log


def _py(api: HfApi, code: str, **kw):
    return api.run_job(image="python:3.12", command=[sys.executable, "-c", code], namespace=NAMESPACE, **kw)


def test_a_job_whose_log_cannot_be_written_ends_error_disk_full(api: HfApi, server) -> None:
    # one job at a time: the second waits in the queue, and its log is made a full disk
    server.service.runner.max_running = 1
    blocker = _py(api, "import time; time.sleep(1.5)")
    job = _py(api, "print('hello'); import time; time.sleep(60)")
    log = paths.log_path(job.id)
    log.unlink(missing_ok=True)
    log.symlink_to("/dev/full")
    wait_stage(api, blocker.id, timeout=30)
    done = wait_stage(api, job.id, timeout=30)
    assert done.status.stage == "ERROR" and done.status.message == DISK_FULL_MESSAGE
    assert server.service.runner.running_count() == 0  # it left the runner, its end recorded


def test_a_log_cut_mid_event_is_repaired_before_anything_is_added(tmp_path) -> None:
    job_id = "0" * 24
    whole = json.dumps({"data": "line one", "timestamp": "2026-12-03T10:00:00Z"})
    paths.log_path(job_id).write_text(whole + "\n" + '{"data": "line tw')  # a crash mid-write
    append_log(job_id, "===== the server stopped while the job was running =====")
    lines = paths.log_path(job_id).read_text().splitlines()
    assert [json.loads(line)["data"] for line in lines] == [
        "line one", "===== the server stopped while the job was running =====",
    ]


def test_the_log_of_a_very_verbose_job_is_capped_with_a_marker(tmp_path) -> None:
    with make_server(log_cap_bytes=64 * 1024) as srv:
        api = HfApi(endpoint=srv.url, token=srv.token)
        job = _py(api, "for i in range(20000): print('x' * 60, i)")
        assert wait_stage(api, job.id, timeout=60).status.stage == "COMPLETED"  # the job itself ran on
        lines = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert lines[-1] == "===== log cut at 0.0625 MiB: later output is not kept ====="
    assert paths.log_path(job.id).stat().st_size < 80 * 1024


def test_tail_reads_the_end_of_a_log_and_following_goes_on_from_there(tmp_path) -> None:
    log = tmp_path / "big.log"
    with open(log, "wb") as fh:
        for i in range(200_000):
            fh.write(json.dumps({"data": f"line {i}"}).encode() + b"\n")
        fh.write(b'{"data": "half')  # still being written
    lines, offset = tail_lines(log, 3, block=4096)
    assert [json.loads(line)["data"] for line in lines] == ["line 199997", "line 199998", "line 199999"]
    assert offset == log.stat().st_size - len(b'{"data": "half')  # the half line comes with the follow
    assert tail_lines(log, 0) == ([], offset)
    assert tail_lines(tmp_path / "missing.log", 5) == ([], 0)
    short = tmp_path / "short.log"
    short.write_bytes(b"a\nb\n")
    assert tail_lines(short, 10) == ([b"a", b"b"], 4)


def test_tail_of_a_job_log_over_the_api(api: HfApi) -> None:
    job = _py(api, "for i in range(50000): print('line', i)")
    assert wait_stage(api, job.id, timeout=60).status.stage == "COMPLETED"
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE, tail=2)) == ["line 49998", "line 49999"]


def test_a_request_body_over_the_cap_is_refused_and_creates_nothing(api: HfApi, server) -> None:
    junk = b'{"dockerImage": "x", "command": ["true"], "environment": {"A": "' + b"x" * MAX_BODY_BYTES + b'"}}'
    answer = httpx.post(f"{server.url}/api/jobs/{NAMESPACE}", content=junk,
                        headers={"authorization": f"Bearer {server.token}"}, timeout=60)
    assert answer.status_code == 413 and "request body is over 8 MiB" in answer.json()["error"]
    assert list(api.list_jobs(namespace=NAMESPACE)) == []


def test_an_empty_token_file_left_by_a_failed_start_is_replaced(tmp_path) -> None:
    paths.token_path().write_text("")
    token = paths.load_or_create_token()
    assert token.startswith("console_") and paths.read_token() == token
    assert oct(paths.token_path().stat().st_mode & 0o777) == "0o600"


@pytest.fixture
def small_disk(tmp_path, monkeypatch):
    """The data folder on a real 3 MB tmpfs (skipped where the machine does not allow the mount)."""
    data = tmp_path / "full"
    if not mount_tmpfs(data):
        pytest.skip("mounting a tmpfs needs privileges this machine does not give")
    try:
        monkeypatch.setenv("CONSOLE_DATA_DIR", str(data))
        yield data
    finally:
        subprocess.run(["umount", "-l", str(data)], capture_output=True)


def test_a_job_that_ends_when_the_disk_is_full_to_the_last_byte_still_has_its_end_recorded(small_disk):
    with make_server() as srv:
        api = HfApi(endpoint=srv.url, token=srv.token)
        # the job waits for the disk to be full (the filler, renamed once it is), then ends
        gate = ("import os, time\n"
                "while not os.path.exists(os.environ['CONSOLE_ARTIFACTS_DIR'] + '/full'): time.sleep(0.05)")
        job = _py(api, gate)
        wait_stage(api, job.id, ("RUNNING",), timeout=60)
        filler = paths.tenant_artifacts_dir(None) / "filling"
        fill_disk(filler)
        filler.rename(filler.with_name("full"))
        done = wait_stage(api, job.id, timeout=60)
        assert done.status.stage == "COMPLETED"
        assert srv.service.runner.running_count() == 0


def test_on_a_3_mb_disk_jobs_end_disk_full_the_api_says_so_and_config_set_is_one_line(small_disk, monkeypatch):
    # a heartbeat on every tick: one that cannot be written must not stop the runner watching
    monkeypatch.setattr(runner, "HEARTBEAT_SECONDS", 0.0)
    with make_server() as srv:
        api = HfApi(endpoint=srv.url, token=srv.token)
        job = _py(api, "import sys\nfor i in range(10**6): sys.stdout.write('y' * 200 + '\\n')")
        done = wait_stage(api, job.id, timeout=60)
        assert done.status.stage == "ERROR" and done.status.message == DISK_FULL_MESSAGE
        for line in paths.log_path(job.id).read_text(errors="replace").splitlines():
            json.loads(line)  # whole events only
        fill_disk(small_disk / "filler")  # take the last bytes too
        answer = httpx.post(f"{srv.url}/api/jobs/{NAMESPACE}",
                            json={"dockerImage": "x", "command": ["true"], "environment": {"A": "b" * 100_000}},
                            headers={"authorization": f"Bearer {srv.token}"}, timeout=30)
        assert answer.status_code in (503, 507), answer.text
        assert "disk full" in answer.json()["error"]
    config = small_disk / "config.toml"
    env = dict(os.environ, CONSOLE_CONFIG=str(config), CONSOLE_DATA_DIR=str(small_disk))
    out = subprocess.run([sys.executable, "-m", "console", "config", "set", "plan", "team"],
                         capture_output=True, text=True, env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "not saved: No space left on device" in out.stderr and "Traceback" not in out.stderr
