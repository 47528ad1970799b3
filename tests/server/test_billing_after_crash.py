"""A job that died with its server is billed for the time it was seen alive, not until the restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, make_server, wait_until

from console.server import paths


def test_a_job_lost_in_a_crash_is_billed_until_its_last_heartbeat(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(f'namespace = "{NAMESPACE}"\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "console", "serve", "--port", "0"],
        env=dict(os.environ, CONSOLE_CONFIG=str(config)), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = proc.stdout.readline().rsplit(" ", 1)[1].strip()
        api = HfApi(endpoint=url, token=paths.read_token())
        job = api.run_job(image="python:3.12", command=[sys.executable, "-c", "import time; time.sleep(300)"],
                          namespace=NAMESPACE)
        running = api.wait_for_job(job.id, stages=["RUNNING"], timeout=30, poll_interval=0.05, namespace=NAMESPACE)
        started = running.started_at.timestamp()
        wait_until(lambda: time.time() - started > 4.5, timeout=30)  # two heartbeats at least
        proc.send_signal(signal.SIGKILL)  # a crash: nothing is written on the way out
        killed = time.time()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdout.close()
    wait_until(lambda: time.time() - killed > 6, timeout=30)  # the restart comes much later

    with make_server() as srv:
        ended = HfApi(endpoint=srv.url, token=srv.token).inspect_job(job_id=job.id, namespace=NAMESPACE)
    assert ended.status.stage == "ERROR" and "server stopped" in ended.status.message
    billed = ended.durations.running_secs if ended.durations else None
    ran = killed - started
    assert billed is not None and ran - 3 <= billed <= ran, (billed, ran)  # not the 11+ s until the restart
