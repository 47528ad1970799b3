"""`--expose` / `hf jobs expose` publish a job's port on loopback, and `hf jobs ssh` (the system ssh
client, as the CLI runs it) opens a shell inside a running `--ssh` job, authenticated by key."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import httpx
import pytest
from huggingface_hub import HfApi
from jobs_helpers import HF_BIN, NAMESPACE, wait_stage, wait_until

from console.server.access.sshd import host_key_path, ssh_dir


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=2).status_code
    except httpx.HTTPError:
        return None


def test_exposed_port_answers_through_its_url(hf, api: HfApi) -> None:
    port, other = _free_port(), _free_port()
    out = hf("jobs", "run", "--detach", "--expose", str(port), "python:3.12", "python", "-m", "http.server",
             str(port), "--bind", "127.0.0.1").stdout
    job_id = out.split("id: ", 1)[1].split()[0]
    wait_stage(api, job_id, ("RUNNING",))
    info = wait_until(lambda: (i := api.inspect_job(job_id=job_id, namespace=NAMESPACE)).status.expose_urls and i)
    assert info.expose == [port] and info.expose_public == []
    [url] = info.status.expose_urls
    assert url.startswith("http://127.0.0.1:") and not url.endswith(f":{port}")
    assert wait_until(lambda: _get(url) == 200)

    updated = hf("jobs", "expose", job_id, str(other), "--public", str(port), "--json").stdout
    assert json.loads(updated)["public_ports"] == [port]
    info = api.inspect_job(job_id=job_id, namespace=NAMESPACE)
    assert info.expose == [other, port] and len(info.status.expose_urls) == 2
    hf("jobs", "expose", job_id, "--clear")
    info = api.inspect_job(job_id=job_id, namespace=NAMESPACE)
    assert info.expose is None and info.status.expose_urls is None
    assert _get(url) is None
    hf("jobs", "cancel", job_id)
    wait_stage(api, job_id)


def test_exposed_urls_close_when_the_job_ends(api: HfApi) -> None:
    port = _free_port()
    job = api.run_job(image="python:3.12", command=["python", "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                      expose=[port], namespace=NAMESPACE)
    wait_stage(api, job.id, ("RUNNING",))
    [url] = wait_until(lambda: api.inspect_job(job_id=job.id, namespace=NAMESPACE).status.expose_urls)
    assert wait_until(lambda: _get(url) == 200)
    api.cancel_job(job_id=job.id, namespace=NAMESPACE)
    wait_stage(api, job.id)
    assert api.inspect_job(job_id=job.id, namespace=NAMESPACE).status.expose_urls is None
    assert _get(url) is None


@pytest.fixture
def ssh_client(server, tmp_path: Path) -> tuple[dict[str, str], Path, int]:
    """An ssh key the server accepts, and an environment whose `ssh` (the one `hf jobs ssh` runs) is
    the system client kept away from the user's own ~/.ssh: it trusts only this server's host key."""
    key = tmp_path / "id_test"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    (ssh_dir() / "authorized_keys").write_text(key.with_suffix(".pub").read_text())
    port = server.service.gateway.ssh.port
    host = subprocess.run(["ssh-keygen", "-y", "-f", str(host_key_path())], capture_output=True, text=True,
                          check=True).stdout.split()
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {host[0]} {host[1]}\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    wrapper = bindir / "ssh"
    wrapper.write_text(f'#!/bin/sh\nexec /usr/bin/ssh -F /dev/null -o UserKnownHostsFile={known} '
                       f'-o StrictHostKeyChecking=yes -o BatchMode=yes "$@"\n')
    wrapper.chmod(0o755)
    env = dict(os.environ, HF_ENDPOINT=server.url, HF_TOKEN=server.token, HF_HUB_DISABLE_UPDATE_CHECK="1",
               NO_COLOR="1", PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return env, key, port


@pytest.mark.skipif(not Path("/usr/bin/ssh").exists(), reason="needs the OpenSSH client")
def test_hf_jobs_ssh_runs_a_command_inside_the_job(api: HfApi, ssh_client) -> None:
    env, key, _ = ssh_client
    job = api.run_job(image="python:3.12", ssh=True, env={"MARK": "from-the-job"}, namespace=NAMESPACE,
                      command=["python", "-c", "import time; open('marker', 'w').write('m'); time.sleep(60)"])
    wait_stage(api, job.id, ("RUNNING",))
    url = api.inspect_job(job_id=job.id, namespace=NAMESPACE).status.ssh_url
    assert url.startswith(f"ssh://{job.id}@127.0.0.1:")
    done = subprocess.run([str(HF_BIN), "jobs", "ssh", job.id, "-i", str(key)], env=env, capture_output=True,
                          text=True, timeout=60, input="echo hello $JOB_ID $MARK; ls; ps -e -o comm=; exit 3\n")
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert f"hello {job.id} from-the-job" in lines and "marker" in lines
    assert "bwrap" in lines and "python" in lines  # the job's own PID namespace: its processes only

    stranger = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key) + "2"], check=True)
    assert stranger.returncode == 0
    refused = subprocess.run([str(HF_BIN), "jobs", "ssh", job.id, "-i", str(key) + "2"], env=env,
                             capture_output=True, text=True, timeout=60, input="echo in\n")
    assert refused.returncode == 255 and "Permission denied" in refused.stderr
    api.cancel_job(job_id=job.id, namespace=NAMESPACE)
    wait_stage(api, job.id)
    assert api.inspect_job(job_id=job.id, namespace=NAMESPACE).status.ssh_url is None


def test_ssh_into_a_job_without_ssh_is_refused(api: HfApi, ssh_client) -> None:
    env, key, port = ssh_client
    plain = api.run_job(image="python:3.12", command=["sleep", "30"], namespace=NAMESPACE)
    wait_stage(api, plain.id, ("RUNNING",))
    out = subprocess.run([str(HF_BIN), "jobs", "ssh", plain.id], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "SSH is not enabled" in out.stdout + out.stderr
    direct = subprocess.run(["ssh", "-i", str(key), "-p", str(port), f"{plain.id}@127.0.0.1", "true"], env=env,
                            capture_output=True, text=True, timeout=30)
    assert direct.returncode == 1 and "started without ssh" in direct.stderr
    api.cancel_job(job_id=plain.id, namespace=NAMESPACE)
    wait_stage(api, plain.id)


def test_a_jobs_urls_read_while_its_forwarders_close_are_answered_not_a_crash():
    """inspect_job reading a job's exposeUrls as the job ends (its listeners closing) got a 500."""
    import threading

    from console.server.access.gateway import Gateway

    gateway = Gateway(lambda job_id: "no ssh")
    gateway.start()
    try:
        errors, done = [], threading.Event()

        def read() -> None:  # inspect_job asking for the urls, over and over
            while not done.is_set():
                try:
                    for url in gateway.urls("j1"):
                        assert url.startswith("http://127.0.0.1:")
                except Exception as exc:  # noqa: BLE001
                    errors.append(exc)
                    return

        readers = [threading.Thread(target=read) for _ in range(2)]
        for r in readers:
            r.start()
        for _ in range(300):  # the job starts with a port exposed, then ends
            gateway.expose("j1", [8000, 8001])
            gateway.close("j1")
        done.set()
        for r in readers:
            r.join()
        assert errors == []
    finally:
        gateway.stop()
