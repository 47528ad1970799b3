"""Each job in its own sandbox, as each HF job is a container: nothing it starts outlives it, and it
sees neither the server's state nor another job's folder, secrets or tenant's artifacts."""

from __future__ import annotations

import sys

import pytest
from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, job_processes, wait_stage

from console.server import paths, sandbox

pytestmark = pytest.mark.skipif(not sandbox.detect().available, reason=sandbox.detect().reason)


def _bash(api: HfApi, script: str, **kw):
    return api.run_job(image="ubuntu", command=["bash", "-c", script], namespace=NAMESPACE, **kw)


def test_a_process_that_calls_setsid_does_not_outlive_its_job(api: HfApi) -> None:
    job = _bash(api, "setsid sleep 421 >/dev/null 2>&1 </dev/null & sleep 2")
    assert wait_stage(api, job.id, timeout=30).status.stage == "COMPLETED"
    assert job_processes(job.id) == []


def test_a_cancel_and_a_timeout_leave_nothing_running(api: HfApi) -> None:
    canceled = _bash(api, "setsid sleep 422 >/dev/null 2>&1 </dev/null & echo up; sleep 300")
    timed_out = _bash(api, "setsid sleep 423 >/dev/null 2>&1 </dev/null & echo up; sleep 300", timeout=3)
    for job in (canceled, timed_out):
        stream = api.fetch_job_logs(job_id=job.id, follow=True, namespace=NAMESPACE)
        next(line for line in stream if line == "up")
        stream.close()
    assert len(job_processes(canceled.id)) >= 2  # the shell and the escaped sleep
    api.cancel_job(job_id=canceled.id, namespace=NAMESPACE)
    assert wait_stage(api, canceled.id, timeout=30).status.stage == "CANCELED"
    done = wait_stage(api, timed_out.id, timeout=30)
    assert done.status.stage == "ERROR" and "timed out" in done.status.message
    assert job_processes(canceled.id) == [] and job_processes(timed_out.id) == []


def test_a_job_sees_no_server_state_no_other_job_and_no_other_tenant(api: HfApi, server) -> None:
    other = _bash(api, "echo ready; sleep 300", secrets={"HF_TOKEN": "hf_globex_secret_9d8f7e"},
                  labels={"tenant": "globex"})
    stream = api.fetch_job_logs(job_id=other.id, follow=True, namespace=NAMESPACE)
    next(line for line in stream if line == "ready")
    stream.close()
    (paths.tenant_artifacts_dir("globex") / "adapter.bin").write_text("globex weights")
    home = paths.server_dir().parent
    probe = f"""
        a="$CONSOLE_ARTIFACTS_DIR"
        for f in "$a/../../server/jobs.sqlite3" "{paths.db_path()}" "{paths.token_path()}" \\
                 "{paths.log_path(other.id)}" "{paths.tenant_artifacts_dir("globex")}/adapter.bin"; do
            if [ -e "$f" ]; then echo "VISIBLE $f"; fi
        done
        ls "{paths.work_root()}"
        grep -rl hf_globex_secret "{home}" 2>/dev/null && echo LEAKED
        echo "mine" > "$a/weights.txt" && echo "wrote $a"
        echo "run" > "$TRACKIO_DIR/probe.txt" && echo "wrote trackio"
        touch "{home}/planted" 2>/dev/null && echo "PLANTED"
        echo done
    """
    job = _bash(api, probe, labels={"tenant": "acme"})
    assert wait_stage(api, job.id, timeout=30).status.stage == "COMPLETED"
    logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert logs[-1] == "done", logs
    assert not [line for line in logs if "VISIBLE" in line or "LEAKED" in line or "PLANTED" in line], logs
    assert other.id not in logs  # the other job's working folder is not there
    assert f"wrote {paths.tenant_artifacts_dir('acme')}" in logs and "wrote trackio" in logs
    assert (paths.tenant_artifacts_dir("acme") / "weights.txt").read_text() == "mine\n"  # it lasts
    assert not (home / "planted").exists()
    api.cancel_job(job_id=other.id, namespace=NAMESPACE)


def test_the_users_login_token_reads_as_empty(api: HfApi, tmp_path, monkeypatch) -> None:
    hf_home = tmp_path / "hf-home"
    hf_home.mkdir()
    (hf_home / "token").write_text("hf_user_login_token_3c2b1a")
    monkeypatch.setenv("HF_HOME", str(hf_home))
    read = f"import os; p = {str(hf_home / 'token')!r}; print(repr(open(p).read()) if os.path.exists(p) else 'absent')"
    job = api.run_job(image="python:3.12", command=[sys.executable, "-c", read], namespace=NAMESPACE)
    assert wait_stage(api, job.id, timeout=30).status.stage == "COMPLETED"
    assert list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE)) in (["''"], ["absent"])


def test_a_job_under_a_root_server_holds_no_capability_and_cannot_escape(api: HfApi, tmp_path) -> None:
    """A root server (these machines, many containers): the job still has no capability, no new
    privileges, cannot unmount its masks or remount the root, and reads nothing of the user's."""
    home = tmp_path / "home"  # the tests' HOME stand-in: a user's key and the console config
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_probe").write_text("PRIVATE-KEY-7f3a")
    config = paths.server_dir().parent.parent / "config" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('webhook = "https://hooks.example/SECRET-91c2"\n')
    other_data = tmp_path / "other-data" / "server"
    other_data.mkdir(parents=True)
    (other_data / "token").write_text("OTHER-SERVER-TOKEN-55e1")
    probe = f"""
        grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status
        echo "uid=$(id -u)"
        umount -l "{paths.server_dir().parent}" 2>/dev/null && echo UNMOUNTED
        mount -o remount,rw / 2>/dev/null && echo REMOUNTED
        for f in "{home}/.ssh/id_probe" "{config}" "{other_data}/token" /etc/shadow; do
            cat "$f" 2>/dev/null
        done
        echo done
    """
    job = _bash(api, probe)
    assert wait_stage(api, job.id, timeout=30).status.stage == "COMPLETED"
    logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert logs[-1] == "done", logs
    status = dict(line.split(":\t", 1) for line in logs if ":\t" in line)
    assert status["CapEff"].strip() == "0000000000000000" and status["CapPrm"].strip() == "0000000000000000"
    assert status["NoNewPrivs"].strip() == "1"
    assert "uid=0" not in logs
    text = "\n".join(logs)
    for leaked in ("UNMOUNTED", "REMOUNTED", "PRIVATE-KEY-7f3a", "SECRET-91c2", "OTHER-SERVER-TOKEN-55e1", "root:"):
        assert leaked not in text, logs
