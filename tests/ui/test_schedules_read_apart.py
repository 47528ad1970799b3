"""The whole schedule list is decoded in a child process (`console.cache.apart`): at 10,000
tenants its one response is 11 MB of JSON, some 60 MB decoded, and decoded in the console that peak
came back at every whole re-read and stepped its memory up (BENCHMARKS.md, "An hour untouched").
The console gets back only the schedules that changed; for the rest it keeps its own objects."""

from __future__ import annotations

import subprocess

import pytest
from huggingface_hub import HfApi
from tests.ui.conftest import schedule_python, wait_for

from console.cache.apart import read_schedules_apart
from console.jobspec import keep_schedule
from console.ui.app import ConsoleApp
from console.ui.refresh_keep import _same

TENANTS = ("acme", "globex", "initech")


def test_the_child_reads_what_the_console_would_and_hands_back_only_what_changed(backend):
    ids = [schedule_python(backend, tenant=t).id for t in TENANTS]
    here = [keep_schedule(sj) for sj in backend.api.list_scheduled_jobs(namespace=backend.namespace)]

    first = read_schedules_apart(backend.api, backend.namespace, {})
    assert first is not None
    assert [s.id for s in first] == [s.id for s in here]
    assert all(_same(a, b) for a, b in zip(first, here, strict=True)), "the child keeps a schedule as the console does"
    assert first[0].request is not None and first[0].request.tenant in TENANTS

    held = {s.id: s for s in first}
    again = read_schedules_apart(backend.api, backend.namespace, held)
    assert again is not None and all(a is held[a.id] for a in again), "an unchanged schedule is the console's own"

    backend.api.suspend_scheduled_job(scheduled_job_id=ids[1], namespace=backend.namespace)
    after = read_schedules_apart(backend.api, backend.namespace, held)
    assert after is not None
    changed = [s for s in after if s is not held[s.id]]
    assert [s.id for s in changed] == [ids[1]] and changed[0].suspend is True


def test_no_child_for_a_stand_in_api_nor_once_cancelled_and_the_token_goes_by_pipe(backend, monkeypatch):
    class StandIn:
        endpoint = backend.url

        def list_scheduled_jobs(self, **kw):
            return []

    assert read_schedules_apart(StandIn(), backend.namespace, {}) is None
    schedule_python(backend)
    assert read_schedules_apart(backend.api, backend.namespace, {}, cancelled=lambda: True) is None

    started: list[tuple] = []
    real = subprocess.Popen

    def spy(args, **kw):
        started.append((args, kw.get("env") or {}))
        return real(args, **kw)

    monkeypatch.setattr(subprocess, "Popen", spy)
    assert read_schedules_apart(backend.api, backend.namespace, {})
    token = backend.api.token
    assert started and all(token not in " ".join(map(str, a)) and token not in e.values() for a, e in started)


@pytest.mark.timeout(120)
async def test_the_console_reads_its_schedules_without_decoding_the_list_itself(backend, cfg, monkeypatch):
    for t in TENANTS:
        schedule_python(backend, tenant=t)

    def decoded_here(self, *args, **kwargs):
        raise AssertionError("the whole schedule list was decoded in the console's own process")

    monkeypatch.setattr(HfApi, "list_scheduled_jobs", decoded_here)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.2, stream_metrics=False, watch_seconds=None,
                     start_tab="fleet")
    async with app.run_test(size=(80, 24)) as pilot:
        r = app.refresher
        await wait_for(pilot, lambda: r.scheduled_read and len(r.fleet_rows) == len(TENANTS), timeout=60,
                       what="the fleet from the schedules")
        assert sorted(r.fleet_rows) == sorted(TENANTS)
        held = dict(r.scheduled)
        done = r._last_full
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: r._last_full > done, timeout=60, what="a whole re-read applied")
        assert r.scheduled.keys() == held.keys()
        assert all(r.scheduled[k] is v for k, v in held.items()), "a re-read keeps the schedules it holds"
