"""An ssh session into a job ends cleanly on the embedded server: asyncssh's clean-up of the
redirected streams is awaited (a `coroutine 'Queue.join' was never awaited` warning in server.log
said it was dropped)."""

from __future__ import annotations

import gc
import subprocess
import time
import warnings
from pathlib import Path

import pytest
from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, wait_stage
from test_expose_and_ssh import ssh_client  # noqa: F401 (the fixture)


@pytest.mark.skipif(not Path("/usr/bin/ssh").exists(), reason="needs the OpenSSH client")
def test_an_ssh_session_leaves_no_unawaited_clean_up(api: HfApi, ssh_client) -> None:  # noqa: F811
    env, key, port = ssh_client
    job = api.run_job(image="python:3.12", ssh=True, namespace=NAMESPACE,
                      command=["python", "-c", "import time; time.sleep(60)"])
    wait_stage(api, job.id, ("RUNNING",))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for command in ("echo one", "echo two"):  # a command, then a tty session
            args = ["ssh", "-i", str(key), "-p", str(port), f"{job.id}@127.0.0.1", command]
            if command == "echo two":
                args.insert(1, "-tt")
            done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=30)
            assert done.returncode == 0, done.stderr
            assert command.split()[1] in done.stdout
        time.sleep(0.5)  # the server's side of the sessions closes
        gc.collect()
    never_awaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert never_awaited == []
    api.cancel_job(job_id=job.id, namespace=NAMESPACE)
    wait_stage(api, job.id)
