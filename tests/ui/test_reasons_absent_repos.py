"""The failed runs' reasons at fleet scale: each reason may add "dataset changed since the last
PASS", read from the run's record in its adapter repo. A tenant no run has pushed for has no repo;
at 10,000 tenants that is most of 800 failed runs, and reading each one's record from the Hub is a
request that answers 404 (the console busy for minutes after a start). The console looks the
owner's repos up in one listing of its models and reads no record from a repo it does not list."""

from __future__ import annotations

import time

from tests.ui.conftest import wait_for

from console import jobspec
from console.server.core import new_id
from console.server.jobs.store import JobRecord
from console.ship import ship
from console.ui.app import ConsoleApp

TENANTS = 12


def _failed_runs(backend) -> list[str]:
    """A failed training run of each tenant, straight into the server's store; their adapter repos
    do not exist."""
    store = backend._server.service.store
    api = backend.api
    for i in range(TENANTS):
        tenant = f"t{i:02d}"
        request = jobspec.TrainingRequest(
            tenant=tenant, dataset=f"{backend.namespace}/{tenant}-chats", base_model="Qwen/Qwen3-0.6B",
            model_b=1.0, examples=500, epochs=1.0, flavor="t4-small", env="prod",
            hub_model_id=f"{backend.namespace}/{tenant}-adapter",
        )
        sub = jobspec.build_submission(request, backend_kind="hub", token="hf_test_not_a_token")
        if getattr(sub, "ships", ()):  # scripts by reference: uploaded to the bucket once
            sub = ship(api, sub, backend.namespace)
        kwargs = sub.scheduled_kwargs("0 3 * * 1", suspend=True)
        kwargs.pop("name", None)
        api.create_scheduled_job(**kwargs, namespace=backend.namespace)
    now = time.time()
    records, ids = [], []
    for n, sj in enumerate(store.iter_scheduled(backend.namespace)):
        spec = sj.spec
        ids.append(new_id())
        records.append(JobRecord(id=ids[-1], namespace=backend.namespace, created_at=now - 600 + n, stage="ERROR",
                                 spec=spec, labels=dict(spec.get("labels") or {}), started_at=now - 590 + n,
                                 finished_at=now - 500 + n, message="CUDA out of memory"))
    store.insert_jobs_bulk(records)
    return ids


async def test_the_reasons_of_runs_whose_repo_does_not_exist_read_no_record_from_the_hub(backend, cfg):
    failed = _failed_runs(backend)
    assert len(failed) == TENANTS
    calls = {"download": 0, "listing": 0}
    api = backend.api
    download, listing = api.hf_hub_download, api.list_models

    def counted_download(*args, **kwargs):
        calls["download"] += 1
        return download(*args, **kwargs)

    def counted_listing(*args, **kwargs):
        calls["listing"] += 1
        return listing(*args, **kwargs)

    api.hf_hub_download, api.list_models = counted_download, counted_listing
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None,
                     start_tab="fleet")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: set(failed) <= set(app.reasons.known), timeout=60, what="every reason")
        assert all(app.reasons.known[i][1].startswith("CUDA out of memory") for i in failed)
        assert calls["download"] == 0  # no run record read from a repo that does not exist
        assert 1 <= calls["listing"] <= 3  # the owner listed once (again after LISTING_TTL_S)
