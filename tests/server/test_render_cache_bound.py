"""The job list's cache of rendered finished jobs is bounded in bytes, not only in entries, and a
full cache loses no job from a list: a page keeps the cached jobs that rendering the rest of the
page evicts (they are not taken for jobs deleted meanwhile)."""

from __future__ import annotations

import sys

from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, wait_stage

from console.server import core


def test_the_render_cache_keeps_at_most_its_bytes_oldest_out(api: HfApi, server, monkeypatch):
    jobs = [api.run_job(image="python:3.12", command=[sys.executable, "-c", "pass"],
                        env={"PAD": "p" * 2000}, namespace=NAMESPACE) for _ in range(6)]
    for job in jobs:
        assert wait_stage(api, job.id, timeout=60).status.stage == "COMPLETED"
    one = len(core.dumps_bytes(server.service.present(server.service.get_job(jobs[0].id))))
    monkeypatch.setattr(core, "RENDER_CACHE_BYTES", 3 * one + one // 2)
    listed = list(api.list_jobs(namespace=NAMESPACE))
    assert {j.id for j in listed} == {j.id for j in jobs}
    service = server.service
    assert service._rendered_bytes <= core.RENDER_CACHE_BYTES
    assert len(service._rendered) == 3  # the three listed last (the oldest jobs) are kept
    assert service._rendered_bytes == sum(len(doc) for doc in service._rendered.values())
    # still correct when served from the cache
    assert [j.id for j in api.list_jobs(namespace=NAMESPACE)] == [j.id for j in listed]
