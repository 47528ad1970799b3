"""A job is held to its flavor's limits: the kernel shows them in `/proc/self/limits`, and a job that
goes over its memory is killed with a message that names the limit, while the server runs on."""

from __future__ import annotations

import sys

import psutil
import pytest
from huggingface_hub import HfApi
from jobs_helpers import GROW, NAMESPACE, make_server, wait_stage

from console.server.host import limits

MiB = 2**20


def _limits_of(logs: list[str]) -> dict[str, list[str]]:
    out = {}
    for line in logs[1:]:  # after the header line of /proc/self/limits
        name, values = line[:26].strip(), line[26:].split()
        out[name] = values
    return out


def test_a_cpu_basic_job_shows_its_memory_process_and_file_limits(api: HfApi) -> None:
    job = api.run_job(image="ubuntu", command=["cat", "/proc/self/limits"], flavor="cpu-basic", namespace=NAMESPACE)
    assert wait_stage(api, job.id, timeout=30).status.stage == "COMPLETED"
    shown = _limits_of(list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE)))
    memory = min(16 * limits.GB, psutil.virtual_memory().total)  # HF lists cpu-basic with 16 GB of RAM
    assert shown["Max resident set"][:2] == [str(memory), str(memory)], shown
    assert shown["Max data size"][:2] == [str(int(memory * limits.DATA_HEADROOM))] * 2, shown
    assert shown["Max processes"][:2] == [str(limits.PROCESS_LIMIT)] * 2, shown
    assert shown["Max open files"][:2] == [str(limits.OPEN_FILES_LIMIT)] * 2, shown
    assert shown["Max file size"][:2] == [str(20 * limits.GB)] * 2, shown  # its 20 GB of storage


@pytest.fixture
def small_server():
    srv = make_server()
    srv.service.runner.caps = limits.Caps(memory_bytes=160 * MiB)  # every job's memory capped here
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def test_a_job_over_its_memory_is_killed_with_the_limit_named_and_the_server_runs_on(small_server) -> None:
    api = HfApi(endpoint=small_server.url, token=small_server.token)
    job = api.run_job(image="python:3.12", command=[sys.executable, "-c", GROW], flavor="cpu-basic",
                      namespace=NAMESPACE)
    done = wait_stage(api, job.id, timeout=60)
    logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert done.status.stage == "ERROR", (done.status, logs[-5:])
    message = done.status.message or ""
    assert message.startswith("Job killed: over its memory limit"), message
    assert "cpu-basic" in message and "MemoryError" not in "\n".join(logs), (message, logs[-5:])
    assert max(int(line.split()[0]) for line in logs if line.endswith(" MiB")) < 240  # killed near 160 MiB
    after = api.run_job(image="ubuntu", command=["echo", "still here"], namespace=NAMESPACE)
    assert wait_stage(api, after.id, timeout=30).status.stage == "COMPLETED"
