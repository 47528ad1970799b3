"""Stopping the server: the requests in flight are answered, the streams that follow a job are
closed at once (they would end only with the job), and nothing is waited out."""

from __future__ import annotations

import logging
import threading

from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, make_server, wait_stage, wait_until

from console.server.faults import Fault


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_stopping_server_answers_requests_in_flight_and_closes_followers_at_once() -> None:
    server = make_server(faults=True)
    server.start()
    records = _Records()
    uvicorn_log = logging.getLogger("uvicorn.error")  # what uvicorn says when it gives up waiting
    uvicorn_log.addHandler(records)  # once started: uvicorn sets up its loggers as it starts
    try:
        api = HfApi(endpoint=server.url, token=server.token)
        job = api.run_job(image="python:3.12", namespace=NAMESPACE,
                          command=["python", "-c", "import time; print('started', flush=True); time.sleep(60)"])
        wait_stage(api, job.id, ("RUNNING",))
        lines: list[str] = []
        ended: list[BaseException | None] = []

        def follow() -> None:
            try:
                for line in api.fetch_job_logs(job_id=job.id, follow=True, namespace=NAMESPACE):
                    lines.append(line)
            except Exception as exc:  # noqa: BLE001 - the cut is what is checked
                ended.append(exc)
            else:
                ended.append(None)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        wait_until(lambda: "started" in lines)

        assert server.faults is not None
        server.faults.add(Fault(kind="delay", path="/api/whoami", seconds=1.0))
        answers: list[str] = []
        asker = threading.Thread(target=lambda: answers.append(api.whoami()["name"]), daemon=True)
        asker.start()
        wait_until(lambda: server.faults.fired)  # the request is in flight, its answer held back
        server.stop()
        asker.join(10)
        follower.join(10)
    finally:
        server.stop()
        uvicorn_log.removeHandler(records)
    assert answers == [NAMESPACE]  # answered within the graceful wait, not dropped
    assert len(ended) == 1 and ended[0] is not None  # the follower saw its connection end
    assert not any("graceful shutdown exceeded" in m for m in records.messages), records.messages
