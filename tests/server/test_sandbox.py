"""Each job in its own sandbox, as each HF job is a container: nothing it starts outlives it, and it
sees neither the server's state nor another job's folder, secrets or tenant's artifacts."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest
from huggingface_hub import HfApi
from jobs_helpers import GROW, NAMESPACE, TOKEN_PROBE, TOKEN_PROBE_DENIED, job_processes, wait_stage

from console.server import paths
from console.server.host import sandbox
from console.server.host.limits import PROCESS_LIMIT

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


def test_a_job_has_its_own_pid_ipc_uts_and_mount_namespaces(api: HfApi) -> None:
    """Each namespace bubblewrap is asked to unshare is a new one: a job cannot reach the host's
    System V shared memory or message queues (IPC), nor set the host's name (UTS)."""
    kinds = ("pid", "ipc", "uts", "mnt")
    job = _bash(api, " ".join(["readlink", *(f"/proc/self/ns/{kind}" for kind in kinds)]))
    assert wait_stage(api, job.id, timeout=30).status.stage == "COMPLETED"
    inside = dict(zip(kinds, api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE), strict=True))
    for kind in kinds:
        assert inside[kind] != os.readlink(f"/proc/self/ns/{kind}"), (kind, inside)


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
    (home / ".ssh" / "config").write_text("Host prod\n  IdentityFile PUBLIC-CONFIG-4d2e\n")
    os.chmod(home / ".ssh" / "config", 0o644)  # world-readable: `nobody` could read it on the host
    os.chmod(other_data / "token", 0o644)
    named = [str(home / ".ssh" / "config"), str(home / ".ssh" / "id_probe"), str(config), str(other_data / "token")]
    by_name = api.run_job(image="ubuntu", command=["cat", *named], namespace=NAMESPACE)  # each path an argument
    assert wait_stage(api, by_name.id, timeout=30).status.stage == "ERROR"  # cat: no such file
    logs += list(api.fetch_job_logs(job_id=by_name.id, namespace=NAMESPACE))
    text = "\n".join(logs)
    for leaked in ("UNMOUNTED", "REMOUNTED", "PRIVATE-KEY-7f3a", "SECRET-91c2", "OTHER-SERVER-TOKEN-55e1", "root:",
                   "PUBLIC-CONFIG-4d2e"):
        assert leaked not in text, logs
    assert "No such file or directory" in text, logs


USER = "console-sbx"
"""The unprivileged user a server is run as below (created when missing)."""


def _unprivileged_user() -> tuple[int, int, Path]:
    import pwd

    if os.geteuid() != 0:
        pytest.skip("running a server as another, unprivileged user needs root; run as a user, every server "
                    "in these tests is already unprivileged")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed: no way to run the server as another user")
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/usr/sbin/nologin",
                        "--comment", "console sandbox tests", USER], capture_output=True, timeout=60)
        entry = pwd.getpwnam(USER)  # made here, or by a test running beside this one
    home_root = Path(entry.pw_dir)
    home_root.mkdir(parents=True, exist_ok=True)
    os.chown(home_root, entry.pw_uid, entry.pw_gid)
    return entry.pw_uid, entry.pw_gid, home_root


def _as_user(uid: int, gid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


def _python_for_user(uid: int, gid: int, env: dict[str, str]) -> tuple[str, dict[str, str]]:
    """A Python the user can run that imports this checkout's console: the tests' own, else the
    system's of the same version with the tests' packages on its path (the tests' interpreter may
    live where only root can read, as under /root/.pyenv)."""
    src = str(Path(__import__("console").__file__).resolve().parents[1])
    candidates = [(sys.executable, {"PYTHONPATH": src}),
                  (f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}",
                   {"PYTHONPATH": f"{src}:{sysconfig.get_paths()['purelib']}"})]
    tried = []
    for python, extra in candidates:
        run_env = {**env, **extra}
        try:
            done = subprocess.run([*_as_user(uid, gid), python, "-c", "import console.server, console.cli"],
                                  env=run_env, capture_output=True, text=True, timeout=120, cwd="/")
        except (OSError, subprocess.TimeoutExpired) as exc:
            tried.append(f"{python}: {exc}")
            continue
        if done.returncode == 0:
            return python, run_env
        tried.append(f"{python}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    pytest.skip(f"no Python that {USER} can run imports the console: {'; '.join(tried)}")


def test_a_job_under_a_users_server_cannot_escape_or_read_the_users_files() -> None:
    """The counterpart of the root test: a server run by an unprivileged user (its jobs run as that
    user, in a user namespace of their own). The job's uid owns every file of the user's, so only
    the sandbox's file system keeps them out: it cannot unmount, remount or get round them with a
    nested user namespace, and reads neither the server's token, nor a key in the user's ~/.ssh,
    nor the console config, nor another data folder's token, nor the XDG login token."""
    uid, gid, home_root = _unprivileged_user()
    home = Path(tempfile.mkdtemp(prefix="home-", dir=home_root))
    mark = secrets.token_hex(4)
    data = home / ".local" / "share" / "console"  # the default data folder of this HOME
    planted = {
        home / ".ssh" / "id_probe": f"PRIVATE-KEY-{mark}",
        home / ".config" / "console" / "config.toml":
            f'namespace = "{NAMESPACE}"\n[notify]\nwebhook_url = "https://hooks.example/SECRET-{mark}"\n',
        home / "other-data" / "server" / "token": f"OTHER-SERVER-TOKEN-{mark}",
        home / ".cache" / "huggingface" / "token": f"hf_XDG_LOGIN_{mark}",
    }
    for path, text in planted.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    for root, dirs, files in os.walk(home):
        for name in [".", *dirs, *files]:
            os.chown(os.path.join(root, name), uid, gid)
    os.chmod(home, 0o700)
    os.chmod(home / ".ssh", 0o700)
    env = {"HOME": str(home), "USER": USER, "LOGNAME": USER, "PATH": "/usr/local/bin:/usr/bin:/bin",
           "XDG_CACHE_HOME": str(home / ".cache"), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_DATA_HOME": str(home / ".local" / "share"), "HF_HUB_DISABLE_TELEMETRY": "1", "LANG": "C.UTF-8",
           "CONSOLE_JOB_MEMORY_MB": "160"}
    python, env = _python_for_user(uid, gid, env)
    log = open(home / "serve.log", "wb")  # noqa: SIM115 (closed below)
    server = subprocess.Popen([*_as_user(uid, gid), python, "-m", "console", "serve", "--port", "0"],
                              env=env, cwd=home, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        info: dict = {}
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and server.poll() is None:
            try:
                info = json.loads((data / "server.json").read_text())
                break
            except (OSError, ValueError):
                time.sleep(0.1)
        assert info.get("pid") == server.pid, (home / "serve.log").read_text(errors="replace")
        if str(info.get("sandbox", "")).startswith("NO SANDBOX"):
            pytest.skip(f"a server run as {USER} has no sandbox on this machine: {info['sandbox']}")
        token_file = data / "server" / "token"
        api = HfApi(endpoint=info["url"], token=token_file.read_text().strip())
        probe = f"""
            grep -E '^(Uid|CapEff|CapPrm|NoNewPrivs)' /proc/self/status
            echo "uid=$(id -u) home=$HOME"
            umount -l "{data}" 2>/dev/null && echo UNMOUNTED
            umount -l /usr 2>/dev/null && echo UNMOUNTED
            mount -o remount,rw / 2>/dev/null && echo REMOUNTED
            mount -t tmpfs none /usr 2>/dev/null && echo MOUNTED
            unshare -rm sh -c 'umount -l /usr && echo NESTED-UNMOUNTED; mount -o remount,rw / && echo NESTED-REMOUNTED;
                               mount --bind "{home}" /tmp && ls -a /tmp' 2>/dev/null
            for f in "{token_file}" {" ".join(f'"{p}"' for p in planted)} /etc/shadow; do
                cat "$f" 2>/dev/null && echo
            done
            ls -a "{home}" 2>/dev/null | sed 's/^/in home: /'
            echo done
        """
        job = _bash(api, probe)
        assert wait_stage(api, job.id, timeout=60).status.stage == "COMPLETED"
        logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
        assert logs[-1] == "done", logs
        # the same files named as the command's own arguments: none of their folders is shown
        by_name = api.run_job(image="ubuntu", command=["cat", str(token_file), *map(str, planted)], namespace=NAMESPACE)
        assert wait_stage(api, by_name.id, timeout=60).status.stage == "ERROR"
        named_logs = list(api.fetch_job_logs(job_id=by_name.id, namespace=NAMESPACE))
        assert "No such file or directory" in "\n".join(named_logs), named_logs
        secrets_named = [f"-{mark}", f"_{mark}", token_file.read_text().strip()]
        assert not [word for word in secrets_named if word in "\n".join(named_logs)], named_logs
        # a job handed this server's token can reach no other job; the flavor's limits hold
        other = api.run_job(image="ubuntu", command=["sleep", "300"], namespace=NAMESPACE)
        handed = api.run_job(image="python:3.12", command=["python3", "-c", TOKEN_PROBE, NAMESPACE, other.id],
                             secrets={"HF_TOKEN": token_file.read_text().strip()}, namespace=NAMESPACE)
        assert wait_stage(api, handed.id, timeout=60).status.stage == "COMPLETED"
        assert json.loads(list(api.fetch_job_logs(job_id=handed.id, namespace=NAMESPACE))[-1]) == TOKEN_PROBE_DENIED
        assert api.inspect_job(job_id=other.id, namespace=NAMESPACE).status.stage == "RUNNING"
        api.cancel_job(job_id=other.id, namespace=NAMESPACE)
        limited = api.run_job(image="ubuntu", command=["cat", "/proc/self/limits"], flavor="cpu-basic",
                              namespace=NAMESPACE)
        assert wait_stage(api, limited.id, timeout=60).status.stage == "COMPLETED"
        shown = "\n".join(api.fetch_job_logs(job_id=limited.id, namespace=NAMESPACE))
        assert f"Max processes             {PROCESS_LIMIT}" in shown, shown
        assert f"Max resident set          {160 * 2**20}" in shown, shown  # capped by CONSOLE_JOB_MEMORY_MB
        grow = api.run_job(image="python:3.12", command=["python3", "-c", GROW], flavor="cpu-basic",
                           namespace=NAMESPACE)
        killed = wait_stage(api, grow.id, timeout=60).status
        assert killed.stage == "ERROR", killed
        assert (killed.message or "").startswith("Job killed: over its memory limit"), killed
        status = dict(line.split(":\t", 1) for line in logs if ":\t" in line)
        assert status["CapEff"].strip() == "0000000000000000" and status["CapPrm"].strip() == "0000000000000000"
        assert status["NoNewPrivs"].strip() == "1"
        assert status["Uid"].split()[0] == str(uid)  # the server's user, not root
        assert f"uid={uid} home=" in "\n".join(logs)
        # the user's home holds only the way down to the job's own folder (in the data folder)
        assert {line for line in logs if line.startswith("in home: ")} <= {"in home: .", "in home: ..",
                                                                            "in home: .local"}, logs
        text = "\n".join(logs)
        leaked = ["UNMOUNTED", "REMOUNTED", "MOUNTED", "id_probe", f"-{mark}", f"_{mark}", "root:",
                  token_file.read_text().strip()]
        assert not [word for word in leaked if word in text], logs
    finally:
        server.send_signal(signal.SIGTERM)  # unwinds: jobs stopped, server.json removed
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)
