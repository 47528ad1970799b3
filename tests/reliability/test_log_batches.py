"""`JobsApi.fetch_job_log_batches`, the log pane's stream: the same lines as huggingface_hub's
`fetch_job_logs(follow=True)`, in lists, none lost or doubled when the stream is cut, dropped,
refused or silent, against the real embedded server with its fault hooks."""

from __future__ import annotations

import json

import pytest
from huggingface_hub import HfApi
from tests.jobwait import wait_stage
from tests.reliability.conftest import COUNTER, run_python

from console.backend import client
from console.backend.client import _log_batches
from console.server.faults import Fault


def _sse(*lines: str) -> bytes:
    return b"".join(b"data: " + json.dumps({"timestamp": "2026-01-01T00:00:00Z", "data": line}).encode() + b"\n\n"
                    for line in lines)


def _batches(backend, job_id: str) -> list[list[str]]:
    return list(backend.api.fetch_job_log_batches(job_id=job_id, namespace=backend.namespace))


# -- the parser ------------------------------------------------------------------------------------


def test_every_split_of_the_byte_stream_gives_the_same_lines():
    lines = ["===== Job started at 2026-01-01T00:00:00Z =====", "step 0 loss=1.0", "", "ünïcødé ✓ 日本",
             'quote " and \\ backslash', "step 1 loss=0.5"]
    body = _sse(*lines[:3]) + b": keep-alive\n\n" + _sse(*lines[3:])
    want = [line for line in lines if not line.startswith("===== Job started")]
    for size in (1, 2, 3, 7, 64, len(body)):
        chunks = [body[i:i + size] for i in range(0, len(body), size)]
        got = list(_log_batches(chunks))
        assert [line for batch in got for line in batch] == want, size
        assert all(got), "no empty batch is handed on"


def test_a_chunk_of_many_events_is_one_batch_and_crlf_is_read():
    body = _sse(*(f"line {i}" for i in range(500))).replace(b"\n", b"\r\n")
    assert list(_log_batches([body])) == [[f"line {i}" for i in range(500)]]


def test_a_broken_event_raises_as_a_per_event_parse_would():
    with pytest.raises(ValueError):
        list(_log_batches([_sse("ok") + b"data: {not json}\n\n"]))


# -- against the embedded server --------------------------------------------------------------------


def test_the_same_lines_as_huggingface_hub_follow_without_the_start_marker(server, backend):
    job = run_python(backend, COUNTER.format(n=300, pause=0.002))
    wait_stage(backend, job.id, ("RUNNING", "COMPLETED"))
    batches = _batches(backend, job.id)
    assert wait_stage(backend, job.id) == "COMPLETED"
    # huggingface_hub's own implementation, not the console's resuming override
    hub = list(HfApi.fetch_job_logs(backend.api, job_id=job.id, namespace=backend.namespace, follow=True))
    flat = [line for batch in batches for line in batch]
    assert flat == hub == [f"line {i}" for i in range(300)]
    assert not any(line.startswith("===== Job started") for line in flat)
    assert all(batches)


@pytest.mark.parametrize(
    "faults",
    [
        [Fault("cut", path="/logs$", after_events=40)],
        [Fault("cut", path="/logs$", after_events=25, drop=True)],
        [Fault("cut", path="/logs$", after_events=30, drop=True),
         Fault("status", path="/logs$", status=503),
         Fault("cut", path="/logs$", after_events=90),
         Fault("status", path=r"/api/jobs/oncall/\w+$", status=502),
         Fault("cut", path="/logs$", after_events=150, drop=True)],
    ],
    ids=["clean-cut", "dropped", "cuts-errors-and-a-failed-stage-check"],
)
def test_a_cut_stream_is_reopened_with_no_line_lost_or_doubled(server, backend, faults):
    job = run_python(backend, COUNTER.format(n=250, pause=0.004))
    wait_stage(backend, job.id, ("RUNNING", "COMPLETED"))
    server.faults.add(*faults)
    batches = _batches(backend, job.id)
    assert wait_stage(backend, job.id) == "COMPLETED"
    assert [line for batch in batches for line in batch] == [f"line {i}" for i in range(250)]
    assert not server.faults.armed()  # every fault really fired


def test_a_cut_just_before_the_job_ends_loses_nothing(server, backend):
    job = run_python(backend, COUNTER.format(n=60, pause=0))
    wait_stage(backend, job.id)
    # the replay ends early and the job is already finished: the stage check alone would stop
    server.faults.add(Fault("cut", path="/logs$", after_events=20))
    assert [line for batch in _batches(backend, job.id) for line in batch] == [f"line {i}" for i in range(60)]


def test_a_quiet_stream_past_the_read_timeout_is_reopened_not_failed(server, backend, monkeypatch):
    monkeypatch.setattr(client, "_LOG_READ_TIMEOUT", 0.3)  # the server's keep-alive is 15 s away
    monkeypatch.setattr(backend.api.policy, "log_resumes", 0)  # a timeout counted as a failure would raise
    job = run_python(backend, "import time\nprint('before', flush=True)\ntime.sleep(1.5)\nprint('after', flush=True)\n")
    wait_stage(backend, job.id, ("RUNNING", "COMPLETED"))
    batches = _batches(backend, job.id)
    assert [line for batch in batches for line in batch] == ["before", "after"]


def test_a_closing_backend_ends_the_stream_quietly(server, backend):
    job = run_python(backend, "import time\nprint('first', flush=True)\ntime.sleep(30)\n")
    wait_stage(backend, job.id, ("RUNNING",))
    server.faults.add(Fault("cut", path="/logs$", after_events=2))
    stream = backend.api.fetch_job_log_batches(job_id=job.id, namespace=backend.namespace)
    assert next(stream) == ["first"]
    backend.api.policy.closing.set()
    assert list(stream) == []


# -- the hand-over to the log pane ------------------------------------------------------------------


def test_batches_handed_over_keep_every_item_in_order_while_the_reader_races():
    from console.ui.streams import iterate_batches

    def make():
        yield from range(20_000)

    batches = list(iterate_batches(make, lambda: False, max_pending=64))
    assert [i for batch in batches for i in batch] == list(range(20_000))
    assert all(batches)


def test_a_failed_stream_hands_over_what_came_then_raises():
    from console.ui.streams import iterate_batches

    def make():
        yield from range(10)
        raise OSError("cut")

    got: list[int] = []
    with pytest.raises(OSError, match="cut"):
        for batch in iterate_batches(make, lambda: False):
            got += batch
    assert got == list(range(10))
