"""The Trackio Space reader (`SpaceTrackioReader`, what the console reads for HF jobs) against a real
Trackio server: trackio's own dashboard server (`trackio.show`) on 127.0.0.1, serving the store the
real training runs wrote, read over HTTP the way a Space is read. It must see what the local reader
sees: the runs, each run's curves and progress, the NaN alert; and say why when the Space is gone.
(Not the NaN itself as a run's latest loss: trackio's HTTP API sends a NaN as null.)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from console.trackio_metrics import LocalTrackioReader, MetricsUnavailable, SpaceTrackioReader, fleet_alerts

SERVE = (
    "import sys, threading, trackio\n"
    "trackio.show(open_browser=False, block_thread=False, host='127.0.0.1', server_port=int(sys.argv[1]))\n"
    "print('serving', flush=True)\n"
    "sys.stdin.read()\n"  # until the test closes our stdin
)
START_TIMEOUT = 60.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}version", timeout=2).is_success
    except httpx.HTTPError:
        return False


@pytest.fixture
def space(trained_store, tmp_path) -> Iterator[tuple[str, subprocess.Popen]]:
    """(url, process) of a Trackio server on a free loopback port over the trained store."""
    env = dict(os.environ, TRACKIO_DIR=str(trained_store.trackio_dir), HF_HUB_OFFLINE="1",
               HF_HUB_DISABLE_TELEMETRY="1", GRADIO_ANALYTICS_ENABLED="False")
    env.pop("HF_TOKEN", None)
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log = tmp_path / "trackio-server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", SERVE, str(port)], env=env, cwd=tmp_path,
                                stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the Trackio server did not answer:\n{log.read_text()[-2000:]}")
            time.sleep(0.1)
        yield url, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        proc.stdin.close()


def test_the_space_reader_reads_what_the_local_reader_reads(trained_store, space):
    url, _ = space
    project = trained_store.project
    remote = SpaceTrackioReader(url)
    local = LocalTrackioReader(trained_store.trackio_dir)

    assert sorted(remote.runs(project)) == sorted(local.runs(project)) == sorted(
        [trained_store.healthy, trained_store.poisoned]
    )

    healthy = remote.run_metrics(project, trained_store.healthy)
    assert healthy == local.run_metrics(project, trained_store.healthy)
    assert healthy.found and len(healthy.loss) == trained_store.steps
    assert healthy.step == healthy.max_steps == trained_store.steps and healthy.loss_trend() == "falling"

    # The run that went NaN: the same curve up to it, the same step, and its ERROR alert.
    poisoned = remote.run_metrics(project, trained_store.poisoned)
    seen_locally = local.run_metrics(project, trained_store.poisoned)
    assert poisoned.loss == seen_locally.loss and len(poisoned.loss) == trained_store.nan_at - 1
    assert poisoned.step == seen_locally.step == trained_store.nan_at
    assert poisoned.alerts == seen_locally.alerts
    [alert] = poisoned.alerts
    assert alert.level == "ERROR" and alert.run == trained_store.poisoned
    assert "NaN" in alert.title and f"step={trained_store.nan_at}" in alert.text

    assert remote.alerts(project) == local.alerts(project)
    assert [a.run for a in fleet_alerts(remote, project)] == [trained_store.poisoned]
    assert not remote.run_metrics(project, "never-ran").found


def test_a_space_that_is_gone_reads_as_unavailable_and_says_which(trained_store, space):
    url, proc = space
    reader = SpaceTrackioReader(url)
    assert reader.runs(trained_store.project)
    proc.kill()
    proc.wait(timeout=30)
    with pytest.raises(MetricsUnavailable, match=f"Trackio Space {url}"):
        reader.runs(trained_store.project)
    with pytest.raises(MetricsUnavailable, match=f"Trackio Space {url}"):
        SpaceTrackioReader(url).alerts(trained_store.project)
