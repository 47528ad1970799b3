"""The embedded Jobs server driven through huggingface_hub.HfApi: real processes, real SQLite."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi, Volume
from huggingface_hub.errors import HfHubHTTPError
from jobs_helpers import NAMESPACE, job_processes, make_server, shared_folder, wait_stage

from console.prices import SHIPPED_FLAVORS
from console.server import paths

PY = sys.executable


def run_py(api: HfApi, code: str, **kw):
    return api.run_job(image="python:3.12", command=["python", "-c", code],
                       namespace=NAMESPACE, **kw)


def test_whoami_is_the_configured_namespace(api: HfApi) -> None:
    assert api.whoami()["name"] == NAMESPACE


def test_job_prints_exits_and_is_listed_inspected_and_logged(api: HfApi) -> None:
    code = (
        "import os\n"
        "print('hello from the job')\n"
        "print('token', os.environ['HF_TOKEN'])\n"
        "for k in ('JOB_ID', 'CONSOLE_ARTIFACTS_DIR', 'TRACKIO_DIR', 'HF_HUB_OFFLINE', 'TENANT'):\n"
        "    print(k, os.environ.get(k))\n"
        "print('cwd', os.getcwd())\n"
    )
    job = run_py(api, code, env={"TENANT": "acme"}, secrets={"HF_TOKEN": "hf_supersecret123"},
                 labels={"tenant": "acme", "app": "console"}, timeout="5m")
    assert job.status.stage in ("SCHEDULING", "RUNNING")
    assert job.created_at is not None and job.owner.name == NAMESPACE
    done = wait_stage(api, job.id)
    assert done.status.stage == "COMPLETED", done.status
    assert done.started_at and done.finished_at and done.finished_at >= done.started_at
    assert done.durations is not None and done.durations.total_secs is not None
    assert done.labels["tenant"] == "acme"
    assert done.environment == {"TENANT": "acme"}
    assert set(done.secrets or {}) == {"HF_TOKEN"}

    logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert logs[0] == "hello from the job"
    assert "token ***" in logs  # secret values are masked in logs
    env_lines = dict(line.split(" ", 1) for line in logs[2:7])
    assert env_lines["JOB_ID"] == job.id
    assert env_lines["CONSOLE_ARTIFACTS_DIR"] == str(paths.artifacts_dir() / "acme")  # its tenant's folder
    assert env_lines["TRACKIO_DIR"] == str(paths.trackio_dir())
    assert env_lines["HF_HUB_OFFLINE"] == "1"
    assert env_lines["TENANT"] == "acme"
    workdir = logs[7].split(" ", 1)[1]
    assert workdir == str(paths.job_workdir(job.id))
    assert not paths.job_workdir(job.id).exists()  # the working folder is thrown away

    # The secret value appears in no answer, and nowhere in the server's files but the database.
    raw = httpx.get(f"{api.endpoint}/api/jobs/{NAMESPACE}/{job.id}",
                    headers={"authorization": f"Bearer {api.token}"}).text
    assert "hf_supersecret123" not in raw
    assert "hf_supersecret123" not in paths.log_path(job.id).read_text()

    other = run_py(api, "print('other')", labels={"tenant": "globex"})
    wait_stage(api, other.id)
    by_label = [j.id for j in api.list_jobs(labels={"tenant": "acme"}, namespace=NAMESPACE)]
    assert by_label == [job.id]
    both = [j.id for j in api.list_jobs(labels={"app": "console", "tenant": "acme"},
                                        namespace=NAMESPACE)]
    assert both == [job.id]
    completed = [j.id for j in api.list_jobs(status="COMPLETED", namespace=NAMESPACE)]
    assert completed == [other.id, job.id]  # newest first
    assert list(api.list_jobs(status=["RUNNING", "SCHEDULING"], namespace=NAMESPACE)) == []
    assert api.inspect_job(job_id=job.id, namespace=NAMESPACE).status.stage == "COMPLETED"


def test_failing_command_ends_in_error_with_exit_code(api: HfApi) -> None:
    job = run_py(api, "import sys; print('bad input'); sys.exit(3)")
    done = wait_stage(api, job.id)
    assert done.status.stage == "ERROR"
    assert "exit code: 3" in done.status.message
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE)) == ["bad input"]


def test_command_not_found_is_an_error(api: HfApi) -> None:
    job = api.run_job(image="ubuntu", command=["definitely-not-a-command-xyz"],
                      namespace=NAMESPACE)
    done = wait_stage(api, job.id)
    assert done.status.stage == "ERROR"
    assert "command not found" in done.status.message


def test_bash_and_uv_run_forms(api: HfApi, tmp_path) -> None:
    script = shared_folder("scripts") / "hello.py"
    script.write_text(
        "# /// script\n# dependencies = ['trl']\n# ///\n"
        "import sys\nprint('script args', sys.argv[1:])\nprint('exe', sys.executable)\n"
    )
    uv_job = api.run_job(
        image="ghcr.io/astral-sh/uv:python3.12-bookworm",
        command=["uv", "run", "--with", "trl", "--python", "3.12", str(script), "--epochs", "2"],
        namespace=NAMESPACE,
    )
    bash_job = api.run_job(image="ubuntu", command=["bash", "-c", "echo one && echo two >&2"],
                           namespace=NAMESPACE)
    assert wait_stage(api, uv_job.id).status.stage == "COMPLETED"
    assert wait_stage(api, bash_job.id).status.stage == "COMPLETED"
    uv_logs = list(api.fetch_job_logs(job_id=uv_job.id, namespace=NAMESPACE))
    assert "script args ['--epochs', '2']" in uv_logs
    assert f"exe {PY}" in uv_logs  # "self" mode: the server's own interpreter
    assert list(api.fetch_job_logs(job_id=bash_job.id, namespace=NAMESPACE)) == ["one", "two"]


def test_follow_logs_streams_until_the_job_ends(api: HfApi, tmp_path) -> None:
    go = shared_folder("signal") / "go"  # the job prints four lines, waits for this file (20 s at most), four more
    code = (
        "import os, sys, time\n"
        "for i in range(8):\n"
        "    print('line', i, flush=True)\n"
        "    until = time.time() + 20\n"
        "    while i == 3 and not os.path.exists(sys.argv[1]) and time.time() < until:\n"
        "        time.sleep(0.01)\n"
    )
    job = api.run_job(image="python:3.12", command=["python", "-c", code, str(go)], namespace=NAMESPACE)
    lines = []
    for line in api.fetch_job_logs(job_id=job.id, follow=True, namespace=NAMESPACE):
        lines.append(line)
        if line == "line 3":  # streamed while the job still runs, not replayed at its end
            assert api.inspect_job(job_id=job.id, namespace=NAMESPACE).status.stage == "RUNNING"
            go.touch()
    assert lines == [f"line {i}" for i in range(8)]  # and the stream ended with the job
    assert api.inspect_job(job_id=job.id, namespace=NAMESPACE).status.stage == "COMPLETED"
    tail = list(api.fetch_job_logs(job_id=job.id, tail=3, namespace=NAMESPACE))
    assert tail == ["line 5", "line 6", "line 7"]
    tail_follow = list(api.fetch_job_logs(job_id=job.id, tail=2, follow=True,
                                          namespace=NAMESPACE))
    assert tail_follow == ["line 6", "line 7"]


def test_logs_stream_is_sse_with_a_date_header(api: HfApi) -> None:
    job = run_py(api, "print('a'); print('b')")
    wait_stage(api, job.id)
    with httpx.stream("GET", f"{api.endpoint}/api/jobs/{NAMESPACE}/{job.id}/logs",
                      headers={"authorization": f"Bearer {api.token}"}) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert "date" in resp.headers
        events = [json.loads(line[6:]) for line in resp.iter_lines() if line.startswith("data: ")]
    assert events[0]["data"].startswith("===== Job started")
    assert [e["data"] for e in events[1:]] == ["a", "b"]
    assert all(e["timestamp"].endswith("Z") and len(e["timestamp"]) == 24 for e in events)


def test_cancel_kills_the_whole_process_group(api: HfApi) -> None:
    code = (
        "import subprocess, sys, time, os\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "print('pids', os.getpid(), child.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    job = run_py(api, code)
    wait_stage(api, job.id, ("RUNNING",))
    stream = api.fetch_job_logs(job_id=job.id, follow=True, namespace=NAMESPACE)
    next(x for x in stream if x.startswith("pids"))
    stream.close()
    assert len(job_processes(job.id)) >= 2  # the job and its child
    api.cancel_job(job_id=job.id, namespace=NAMESPACE)
    done = wait_stage(api, job.id, timeout=10)
    assert done.status.stage == "CANCELED"
    assert job_processes(job.id) == [], "a process of the job survived the cancel"
    assert not paths.job_workdir(job.id).exists()


def test_timeout_kills_the_job(api: HfApi) -> None:
    job = run_py(api, "import time; print('start', flush=True); time.sleep(60)", timeout=1)
    done = wait_stage(api, job.id, timeout=30)  # well before its 60 s sleep could end
    assert done.status.stage == "ERROR"
    assert "timed out after 1s" in done.status.message
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))[-1] == "start"


def test_default_timeout_is_30_minutes(api: HfApi) -> None:
    job = run_py(api, "print(1)")
    raw = httpx.get(f"{api.endpoint}/api/jobs/{NAMESPACE}/{job.id}",
                    headers={"authorization": f"Bearer {api.token}"}).json()
    assert raw["timeoutSeconds"] == 1800


def test_running_limit_keeps_the_rest_scheduling(tmp_path) -> None:
    with make_server(max_running_jobs=1) as srv:
        api = HfApi(endpoint=srv.url, token=srv.token)
        first = run_py(api, "import time; time.sleep(60)")
        second = run_py(api, "print('second ran')")
        wait_stage(api, first.id, ("RUNNING",))
        queued = api.inspect_job(job_id=second.id, namespace=NAMESPACE)
        assert queued.status.stage == "SCHEDULING"
        assert "Waiting for a free slot: 1 of 1" in queued.status.message
        api.cancel_job(job_id=first.id, namespace=NAMESPACE)
        ran = wait_stage(api, second.id)
        assert ran.status.stage == "COMPLETED"
        # it started only once the first had ended and freed the slot
        ended = api.inspect_job(job_id=first.id, namespace=NAMESPACE)
        assert ran.started_at >= ended.finished_at
        # A queued job can be canceled before it ever runs.
        third = run_py(api, "import time; time.sleep(60)")
        fourth = run_py(api, "print('never')")
        wait_stage(api, third.id, ("RUNNING",))
        api.cancel_job(job_id=fourth.id, namespace=NAMESPACE)
        assert wait_stage(api, fourth.id).status.stage == "CANCELED"
        assert wait_stage(api, fourth.id).started_at is None
        api.cancel_job(job_id=third.id, namespace=NAMESPACE)


def test_rerun_and_label_update(api: HfApi) -> None:
    job = run_py(api, "print('again')", labels={"tenant": "acme"}, secrets={"K": "v123456"})
    wait_stage(api, job.id)
    again = api.rerun_job(job_id=job.id, namespace=NAMESPACE)
    assert again.id != job.id
    assert again.command == job.command
    assert again.initiator.type == "duplicated-job"
    assert set(again.secrets or {}) == {"K"}
    assert wait_stage(api, again.id).status.stage == "COMPLETED"
    updated = api.update_job_labels(job_id=job.id, labels={"tenant": "globex", "env": "prod"},
                                    namespace=NAMESPACE)
    assert updated.labels == {"tenant": "globex", "env": "prod"}
    assert [j.id for j in api.list_jobs(labels={"tenant": "globex"}, namespace=NAMESPACE)] == [
        job.id
    ]


def test_attempts_retry_a_failing_job(api: HfApi) -> None:
    job = run_py(api, "import sys; print('try'); sys.exit(1)", attempts=2)
    done = wait_stage(api, job.id)
    assert done.status.stage == "ERROR"
    assert done.retry == 1
    logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert logs == ["try", "===== Retrying: attempt 2 of 2 =====", "try"]


def test_metrics_stream_reports_the_process_tree(api: HfApi) -> None:
    job = run_py(api, "x = bytearray(50_000_000)\nimport time\ntime.sleep(30)")
    wait_stage(api, job.id, ("RUNNING",))
    sample = next(iter(api.fetch_job_metrics(job_id=job.id, namespace=NAMESPACE)))
    assert sample["memory_used_bytes"] > 40_000_000
    assert sample["memory_total_bytes"] >= sample["memory_used_bytes"]
    assert sample["gpus"] == {}
    assert {"cpu_usage_pct", "cpu_millicores", "rx_bps", "tx_bps", "replica"} <= set(sample)
    api.cancel_job(job_id=job.id, namespace=NAMESPACE)
    wait_stage(api, job.id)
    assert list(api.fetch_job_metrics(job_id=job.id, namespace=NAMESPACE)) == []


def test_hardware_comes_from_the_price_data(api: HfApi) -> None:
    hardware = {hw.name: hw for hw in api.list_jobs_hardware()}
    assert set(hardware) == {f.name for f in SHIPPED_FLAVORS}
    l4 = hardware["l4x1"]
    assert l4.unit_label == "minute"
    assert l4.unit_cost_usd == pytest.approx(0.80 / 60, rel=1e-4)
    assert l4.accelerator is not None and l4.accelerator.vram == "24 GB"
    assert hardware["cpu-basic"].accelerator is None


def test_hardware_carries_hf_names_cpu_and_ram(api: HfApi) -> None:
    """As HF lists them (tests/contract/hf_shapes.py): its pretty names, vCPUs and RAM, never "N/A"."""
    spec = importlib.util.spec_from_file_location("hf_shapes", Path(__file__).parents[1] / "contract" / "hf_shapes.py")
    shapes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shapes)
    ours = {hw.name: hw for hw in api.list_jobs_hardware()}
    for theirs in shapes.hardware():
        if theirs.name in ours:
            mine = ours[theirs.name]
            assert (mine.pretty_name, mine.cpu, mine.ram, mine.ephemeral_storage) == (
                theirs.pretty_name, theirs.cpu, theirs.ram, theirs.ephemeral_storage)
    assert all("N/A" not in (hw.cpu, hw.ram, hw.ephemeral_storage) for hw in ours.values())
    assert (ours["h200x8"].cpu, ours["h200x8"].ram, ours["cpu-xl"].pretty_name) == ("184 vCPU", "2048 GB", "CPU XL")


def test_requests_without_the_token_get_401(server) -> None:
    for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": server.token}):
        resp = httpx.get(f"{server.url}/api/jobs/{NAMESPACE}", headers=headers)
        assert resp.status_code == 401
    assert httpx.get(f"{server.url}/api/whoami-v2").status_code == 401
    with pytest.raises(HfHubHTTPError) as err:
        next(iter(HfApi(endpoint=server.url, token="nope").list_jobs(namespace=NAMESPACE)))
    assert err.value.response.status_code == 401


def test_token_file_is_private(server) -> None:
    assert paths.token_path().stat().st_mode & 0o777 == 0o600
    assert paths.token_path().read_text().strip() == server.token


def test_unsupported_requests_get_a_clear_4xx(api: HfApi) -> None:
    with pytest.raises(HfHubHTTPError) as err:
        api.run_job(image="python:3.12", command=["ls"], namespace=NAMESPACE,
                    volumes=[Volume(type="bucket", source="me/b", mount_path="data")])
    assert err.value.response.status_code == 400
    assert "volumes[0].mountPath: invalid value 'data': must be an absolute path" in str(err.value)
    with pytest.raises(HfHubHTTPError) as err:
        api.run_job(image="python:3.12", command=["ls"], namespace=NAMESPACE, expose=[70000])
    assert "expose" in str(err.value)
    with pytest.raises(HfHubHTTPError) as err:
        api.run_job(image="hf.co/spaces/me/app", command=["ls"], namespace=NAMESPACE)
    assert "Space images" in str(err.value)
    with pytest.raises(HfHubHTTPError) as err:
        api.run_job(image="python:3.12", command=["ls"], namespace=NAMESPACE, flavor="tpu-v9")
    assert "unknown flavor" in str(err.value)
    with pytest.raises(HfHubHTTPError) as err:
        api.create_bucket("someone-else/jobs-artifacts", exist_ok=True)
    assert err.value.response.status_code == 403
    assert "buckets" in str(err.value)
    with pytest.raises(HfHubHTTPError) as err:
        next(iter(api.list_jobs(namespace="someone-else")))
    assert err.value.response.status_code == 403
    with pytest.raises(HfHubHTTPError) as err:
        api.inspect_job(job_id="0" * 24, namespace=NAMESPACE)
    assert err.value.response.status_code == 404


def test_list_is_paginated_for_long_histories(api: HfApi, server) -> None:
    from console.server.core import new_id
    from console.server.jobs.store import JobRecord

    now = time.time()
    spec = {"dockerImage": "python:3.12", "command": ["true"], "arguments": [],
            "environment": {}, "flavor": "cpu-basic", "timeoutSeconds": 60, "attempts": 1,
            "labels": {}, "ssh": False, "tags": []}
    jobs = [
        JobRecord(id=new_id(), namespace=NAMESPACE, created_at=now - 3000 + i, stage="COMPLETED",
                  spec=spec, labels={"tenant": f"t{i % 3}"}, started_at=now - 3000 + i,
                  finished_at=now - 2999 + i)
        for i in range(2500)
    ]
    server.service.store.insert_jobs_bulk(jobs)
    listed = list(api.list_jobs(namespace=NAMESPACE))
    assert len(listed) == 2500
    assert listed[0].id == jobs[-1].id and listed[-1].id == jobs[0].id
    t1 = list(api.list_jobs(labels={"tenant": "t1"}, namespace=NAMESPACE))
    assert len(t1) == len([j for j in jobs if j.labels["tenant"] == "t1"])


def test_jobs_share_the_cores_among_the_slots_unless_they_set_their_threads(api: HfApi, monkeypatch) -> None:
    """Four job slots on this machine: each job's OpenMP / MKL pools get its share of the cores, so
    jobs running side by side do not spin against each other (a tiny model's step took seconds)."""
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    code = "import os; print(os.environ.get('OMP_NUM_THREADS'), os.environ.get('MKL_NUM_THREADS'))"
    shared = run_py(api, code)
    own = run_py(api, code, env={"OMP_NUM_THREADS": "3"})
    share = max(1, len(os.sched_getaffinity(0)) // 4)  # make_server: max_running_jobs=4
    assert wait_stage(api, shared.id).status.stage == "COMPLETED"
    assert wait_stage(api, own.id).status.stage == "COMPLETED"
    assert list(api.fetch_job_logs(job_id=shared.id, namespace=NAMESPACE)) == [f"{share} {share}"]
    assert list(api.fetch_job_logs(job_id=own.id, namespace=NAMESPACE)) == [f"3 {share}"]
