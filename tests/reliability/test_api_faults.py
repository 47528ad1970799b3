"""Faults from the jobs API, injected into the real embedded server, seen through the console's
one client layer (console.backend): retries with backoff, Retry-After honoured, bounded timeouts,
no duplicate submissions, log streams resumed with no line lost or doubled."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import pytest
from huggingface_hub.errors import HfHubHTTPError
from tests.jobwait import wait_stage
from tests.reliability.conftest import COUNTER, fast_policy, job_count, run_python

from console.backend import ServerUnreachable, connect, retry_after_seconds
from console.server import LocalServer, ServerOptions
from console.server.faults import ADMIN_PATH, Fault

JOBS = r"/api/jobs/oncall$"



def test_5xx_on_reads_is_retried_until_it_passes(server, backend):
    server.faults.add(Fault("status", path=JOBS, method="GET", status=500, times=1),
                      Fault("status", path=JOBS, method="GET", status=502, times=1),
                      Fault("status", path=JOBS, method="GET", status=503, times=1))
    assert job_count(backend) == 0
    assert [f[0] for f in server.faults.fired] == ["status"] * 3
    assert backend.policy.retries == 3


def test_429_waits_for_retry_after(server, backend):
    server.faults.add(Fault("status", path=JOBS, status=429, retry_after=1, times=1))
    started = time.monotonic()
    assert job_count(backend) == 0
    assert time.monotonic() - started >= 0.95  # the server asked for a second: it got it


def test_retry_after_longer_than_the_cap_is_shown_not_waited(server, backend):
    server.faults.add(Fault("status", path=JOBS, status=429, retry_after=600, times=1))
    with pytest.raises(HfHubHTTPError) as err:
        job_count(backend)
    assert err.value.response.status_code == 429
    assert err.value.response.headers["retry-after"] == "600"  # there for the caller to show
    assert backend.policy.retries == 0  # not waited out and tried again
    assert job_count(backend) == 0  # and the next call works


def test_a_storm_longer_than_the_retries_surfaces_as_an_error(server, backend):
    server.faults.add(Fault("status", path=JOBS, status=503, times=None))
    with pytest.raises(HfHubHTTPError) as err:
        job_count(backend)
    assert err.value.response.status_code == 503
    assert backend.policy.retries == backend.policy.attempts - 1
    server.faults.clear()
    assert job_count(backend) == 0


def test_a_slow_answer_past_the_timeout_is_retried(server, backend):
    server.faults.add(Fault("delay", path=JOBS, seconds=3.0, times=1))
    assert job_count(backend) == 0
    # it gave up on the slow answer (past the 1 s timeout) and asked again
    assert [f[0] for f in server.faults.fired] == ["delay"]
    assert backend.policy.retries == 1


def test_a_connection_dropped_mid_answer_is_retried(server, backend):
    server.faults.add(Fault("cut", path=JOBS, after_events=0, drop=True, times=2))
    assert job_count(backend) == 0
    assert len(server.faults.fired) == 2


def test_submissions_are_never_sent_twice_after_an_ambiguous_failure(server, backend):
    # A 500 or a timeout on POST may come after the job was created: never repeat it blindly.
    server.faults.add(Fault("status", path=JOBS, method="POST", status=500, times=1))
    with pytest.raises(HfHubHTTPError):
        run_python(backend, "print(1)")
    server.faults.add(Fault("delay", path=JOBS, method="POST", seconds=1.5, times=1))
    with pytest.raises(ServerUnreachable, match="it may have been done anyway"):
        run_python(backend, "print(1)")  # timed out: said once, not sent again
    # the server acted on the slow request before holding its answer back: one job, from it
    deadline = time.monotonic() + 10
    while job_count(backend) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job_count(backend) == 1  # the delayed one ran once; the 500 one never did


def test_submissions_refused_with_429_or_503_are_sent_again_once(server, backend):
    server.faults.add(Fault("status", path=JOBS, method="POST", status=503, times=1),
                      Fault("status", path=JOBS, method="POST", status=429, retry_after=0,
                            times=1))
    job = run_python(backend, "print('once')")
    wait_stage(backend, job.id)
    assert job_count(backend) == 1


def test_cancel_is_retried_because_it_is_idempotent(server, backend):
    job = run_python(backend, "import time; time.sleep(60)")
    wait_stage(backend, job.id, ("RUNNING",))
    server.faults.add(Fault("status", path=r"/cancel$", status=500, times=2))
    backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)
    assert wait_stage(backend, job.id) == "CANCELED"


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
def test_a_log_stream_cut_mid_job_resumes_with_no_line_lost_or_doubled(server, backend, faults):
    job = run_python(backend, COUNTER.format(n=250, pause=0.004))
    wait_stage(backend, job.id, ("RUNNING", "COMPLETED"))
    server.faults.add(*faults)
    seen = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace,
                                           follow=True))
    assert wait_stage(backend, job.id) == "COMPLETED"
    full = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace))
    assert full == [f"line {i}" for i in range(250)]
    assert seen == full
    assert not server.faults.armed()  # every fault really fired


def test_a_cut_just_before_the_job_ends_loses_nothing(server, backend):
    job = run_python(backend, COUNTER.format(n=60, pause=0))
    wait_stage(backend, job.id)
    # the replay ends early and the job is already finished: the stage check alone would stop
    server.faults.add(Fault("cut", path="/logs$", after_events=20))
    seen = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace,
                                           follow=True))
    assert seen == [f"line {i}" for i in range(60)]


def test_a_server_that_goes_away_and_comes_back_is_found_again(server, cfg):
    backend = connect(cfg, policy=fast_policy(attempts=3))
    try:
        port = server.port
        run_python(backend, "print('before')")
        server.stop()
        with pytest.raises(ServerUnreachable, match="no answer from the jobs API after 3 tries"):
            job_count(backend)
        again = LocalServer(ServerOptions(namespace=cfg.namespace, port=port, token=server.token))
        again.start()
        try:
            assert job_count(backend) == 1  # same client, same URL: it recovered by itself
        finally:
            again.stop()
    finally:
        backend.close()


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds("3") == 3
    assert retry_after_seconds("0.5") == 0.5
    assert retry_after_seconds("-4") == 0
    assert retry_after_seconds("Wed, 02 Dec 2026 10:00:30 GMT", now=1796205600.0) == 30
    for junk in (None, "", "soon", "nan", "inf", "Wed, 99 Foo"):
        assert retry_after_seconds(junk) is None


def _admin(server, method: str, body: object | None = None, token: str | None = None):
    req = urllib.request.Request(
        server.url + ADMIN_PATH, method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"authorization": f"Bearer {token or server.token}"},
    )
    with urllib.request.urlopen(req, timeout=5) as resp:
        return resp.status, json.loads(resp.read())


def test_faults_can_be_armed_over_http_with_the_token_only(server, backend):
    status, armed = _admin(server, "POST", [{"kind": "status", "path": JOBS, "status": 503}])
    assert status == 200 and armed[0]["status"] == 503
    assert job_count(backend) == 0 and server.faults.fired
    with pytest.raises(urllib.error.HTTPError) as err:
        _admin(server, "GET", token="wrong")
    assert err.value.code == 401
    with pytest.raises(urllib.error.HTTPError) as err:
        _admin(server, "POST", [{"kind": "explode"}])
    assert err.value.code == 400
    assert _admin(server, "DELETE") == (200, {})


def test_a_server_started_normally_has_no_fault_hooks(monkeypatch):
    srv = LocalServer(ServerOptions(namespace="oncall", token="t0ken-for-test"))
    srv.start()
    try:
        assert srv.faults is None
        with pytest.raises(urllib.error.HTTPError) as err:
            _admin(srv, "POST", [{"kind": "status"}])
        assert err.value.code == 404  # the jobs API's own "not supported" answer
        assert json.loads(err.value.read())["error"].startswith(
            "POST /admin/faults is not supported by the local Jobs server")
    finally:
        srv.stop()
