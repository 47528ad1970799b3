"""A scheduled tenant whose live adapter version is older than `notify.stale_live_periods` (3) of its
schedule's periods is flagged in the watch report and notified once per live version: its runs keep
failing, or pass and are never promoted. The repo is real (the embedded server's Hub, its commits and
its live tag as the recipes write them); the watcher's clock is moved on instead of waiting hours."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from huggingface_hub import HfApi
from tests.oncall.conftest import NAMESPACE, wait_for

from console import jobspec
from console.jobspec import TrainingRequest
from console.oncall import Watcher
from console.oncall.store import OnCallStore
from console.ship import ship

DATA = Path(__file__).resolve().parents[2] / "training" / "data"
REPO = f"{NAMESPACE}/adapter-acme"


def _land(api: HfApi, run: str, tmp_path: Path) -> str:
    """A passing run's landing on main and the live tag moved to it, as training/jobkit/run.py does."""
    manifest = tmp_path / f"{run}.json"
    manifest.write_text(json.dumps({"run_name": run, "verdict": "PASS", "first_loss": 6.0, "last_loss": 5.0}))
    info = api.upload_file(path_or_fileobj=str(manifest), path_in_repo="manifest.json", repo_id=REPO,
                           commit_message=f"{run}: PASS run={run} steps=10")
    if "live" in {t.name for t in api.list_repo_refs(REPO).tags}:
        api.delete_tag(REPO, tag="live")
    api.create_tag(REPO, tag="live", revision=info.oid)
    return info.oid


def _acme_live_and_hourly(backend, tmp_path: Path):
    """acme's repo with a passing run live, and acme's hourly schedule: (HfApi, live commit, schedule)."""
    api = HfApi(endpoint=backend.api.endpoint, token=backend.api.token)
    api.create_repo(REPO)
    first = _land(api, "acme-1", tmp_path)
    req = TrainingRequest(tenant="acme", dataset=str(DATA / "acme.jsonl"), hub_model_id=REPO, scheduled=True)
    sub = jobspec.build_submission(req, backend_kind="local", token=backend.api.token)
    sj = backend.api.create_scheduled_job(**ship(backend.api, sub, NAMESPACE).scheduled_kwargs("@hourly"),
                                          namespace=NAMESPACE)
    return api, first, sj


def test_a_live_adapter_older_than_three_periods_is_flagged_and_notified_once(backend, cfg, listener, tmp_path):
    cfg.notify.webhook_url = listener.url + "/hook"
    api, first, sj = _acme_live_and_hourly(backend, tmp_path)
    store = OnCallStore(tmp_path / "oncall.sqlite")
    now = datetime.now(UTC)

    def check(hours: float):
        watch = Watcher(backend.api, cfg, namespace=NAMESPACE, store=store, clock=lambda: now + timedelta(hours=hours))
        return watch.check()

    report = check(2)  # two hourly periods: not yet
    assert report.stale_live == [] and "stale" not in report.line()

    report = check(4)
    [stale] = report.stale_live
    assert (stale.tenant, stale.repo_id, stale.commit, stale.scheduled_job_id) == ("acme", REPO, first, sj.id)
    assert stale.period_s == 3600 and 4 * 3600 - 60 < stale.age_s < 4 * 3600 + 60
    assert "1 live adapter stale (acme 4h" in report.line()
    assert report.to_dict()["stale_live"][0]["commit"] == first
    [event] = [e for e in report.events if e.kind == "stale_live"]
    assert event.title.startswith("acme's live adapter is 4h") and "console adapters acme" in event.text
    def posted() -> list[dict]:
        return [b for b in listener.bodies("/hook") if b["event"] == "stale_live"]

    wait_for(lambda: len(posted()) == 1, timeout=10)

    report = check(5)  # still flagged, not said again
    assert [s.commit for s in report.stale_live] == [first] and not [e for e in report.events if e.kind == "stale_live"]

    _land(api, "acme-2", tmp_path)  # a new live version: nothing stale
    assert check(1).stale_live == []

    cfg.notify.stale_live_periods = 0
    assert check(100).stale_live == []
    assert len(posted()) == 1


class _Counting:
    """The backend's HfApi, noting each repo whose refs are read (the first of `live_since`'s two
    requests)."""

    def __init__(self, api) -> None:
        self.api, self.read = api, []

    def list_repo_refs(self, repo_id, **kwargs):
        self.read.append(repo_id)
        return self.api.list_repo_refs(repo_id, **kwargs)

    def __getattr__(self, name):
        return getattr(self.api, name)


def test_live_versions_are_read_once_then_when_they_may_be_stale_or_are_due_and_a_restart_reads_none(
        backend, cfg, tmp_path, monkeypatch):
    """A pass does not read every tenant's live tag: what was read is kept in the on-call store,
    a repo is read again when by that it may have gone stale, else once per LIVE_RECHECK_S, a
    few a pass, the longest unread first (at 10,000 tenants every pass read 20,000 requests)."""
    from console.oncall import stale_live

    monkeypatch.setattr(stale_live, "LIVE_RECHECKS_PER_PASS", 3)
    api = HfApi(endpoint=backend.api.endpoint, token=backend.api.token)
    repos = [f"{NAMESPACE}/adapter-t{i}" for i in range(8)]
    for i, repo in enumerate(repos):
        api.create_repo(repo)
        manifest = tmp_path / f"t{i}.json"
        manifest.write_text(json.dumps({"run_name": f"t{i}-1", "verdict": "PASS"}))
        info = api.upload_file(path_or_fileobj=str(manifest), path_in_repo="manifest.json", repo_id=repo)
        api.create_tag(repo, tag="live", revision=info.oid)
        req = TrainingRequest(tenant=f"t{i}", dataset=str(DATA / "acme.jsonl"), hub_model_id=repo, scheduled=True)
        sub = jobspec.build_submission(req, backend_kind="local", token=backend.api.token)
        backend.api.create_scheduled_job(**ship(backend.api, sub, NAMESPACE).scheduled_kwargs("0 3 * * *"),
                                         namespace=NAMESPACE)  # daily: stale after 3 days
    store = OnCallStore(tmp_path / "oncall.sqlite")
    now = datetime.now(UTC)
    counting = _Counting(backend.api)

    def watcher():
        clock = {"hours": 0.0}
        watch = Watcher(counting, cfg, namespace=NAMESPACE, store=store,
                        clock=lambda: now + timedelta(hours=clock["hours"]))

        def check(hours: float) -> list[str]:
            clock["hours"] = hours
            del counting.read[:]
            watch.stale_live.checked_at = None  # a live pass every check (one is due every LIVE_EVERY_S)
            report = watch.check()
            assert report.stale_live == [] or hours >= 72, report.stale_live
            return list(counting.read)

        return check

    check = watcher()
    assert sorted(check(1)) == repos  # never read: every one
    assert check(1.2) == []  # read, and cannot be stale before three days: none
    assert watcher()(2) == []  # a restart: what was read is kept

    moved = api.upload_file(path_or_fileobj=b"{}", path_in_repo="notes.json", repo_id=repos[0]).oid
    api.delete_tag(repos[0], tag="live")
    api.create_tag(repos[0], tag="live", revision=moved)  # a tag moved by hand
    check = watcher()
    rounds = [check(7), check(7.2), check(7.4), check(7.6)]  # 6 h after the read: due, 3 a pass
    assert [len(r) for r in rounds] == [3, 3, 2, 0] and sorted(sum(rounds, [])) == repos
    assert store.live_reads()[repos[0]].commit == moved

    stale = Watcher(counting, cfg, namespace=NAMESPACE, store=store, clock=lambda: now + timedelta(hours=80))
    del counting.read[:]
    assert sorted(s.repo_id for s in stale.check().stale_live) == repos  # may be stale: read, and they are
    assert sorted(counting.read) == repos


class _CountingSchedules(_Counting):
    """The backend's HfApi, noting each read of the whole schedule list."""

    def __init__(self, api) -> None:
        super().__init__(api)
        self.schedule_reads = 0

    def list_scheduled_jobs(self, **kwargs):
        self.schedule_reads += 1
        return self.api.list_scheduled_jobs(**kwargs)


def test_a_watcher_beside_the_app_projects_and_flags_from_the_apps_schedules_and_reads_none_of_its_own(
        backend, cfg, tmp_path):
    """In the TUI the app's refresher already keeps every schedule: its watcher uses that copy (a
    second one of 10,000 schedules, read every few minutes, was tens of MB). Until the app has read
    them, a pass reads them itself."""
    api, first, sj = _acme_live_and_hourly(backend, tmp_path)
    store = OnCallStore(tmp_path / "oncall.sqlite")
    later = datetime.now(UTC) + timedelta(hours=4)  # four hourly periods: stale
    counting = _CountingSchedules(backend.api)
    kept: dict[str, list | None] = {"schedules": None}

    def check():
        return Watcher(counting, cfg, namespace=NAMESPACE, store=store, clock=lambda: later,
                       schedules=lambda: kept["schedules"]).check()

    report = check()  # the app has not read them yet: the pass reads them
    assert counting.schedule_reads == 1
    assert [(s.tenant, s.commit) for s in report.stale_live] == [("acme", first)]
    assert [f.scheduled_job_id for f in report.summary.schedules] == [sj.id]

    kept["schedules"] = [jobspec.compact_job(s) for s in backend.api.list_scheduled_jobs(namespace=NAMESPACE)]
    report = check()
    assert counting.schedule_reads == 1  # none of its own
    assert [(s.tenant, s.commit) for s in report.stale_live] == [("acme", first)]
    assert [f.scheduled_job_id for f in report.summary.schedules] == [sj.id]

    kept["schedules"] = []  # the app's last read found none: neither does the pass
    report = check()
    assert counting.schedule_reads == 1 and report.stale_live == [] and report.summary.schedules == []


def test_repos_the_hub_does_not_have_are_not_read_one_by_one(backend, cfg, tmp_path, monkeypatch):
    """Until a tenant's first run pushes, its adapter repo does not exist: one listing of the owner's
    models says so for all of them (at 10,000 tenants, 10,000 reads answering 404 kept a started
    console busy for minutes); the repo that exists is read, and every one is kept as read."""
    from console.oncall import livereads

    monkeypatch.setattr(livereads, "LIST_AT_LEAST", 3)
    api = HfApi(endpoint=backend.api.endpoint, token=backend.api.token)
    repos = [f"{NAMESPACE}/adapter-n{i}" for i in range(5)]
    api.create_repo(repos[0])
    manifest = tmp_path / "n0.json"
    manifest.write_text(json.dumps({"run_name": "n0-1", "verdict": "PASS"}))
    info = api.upload_file(path_or_fileobj=str(manifest), path_in_repo="manifest.json", repo_id=repos[0])
    api.create_tag(repos[0], tag="live", revision=info.oid)
    for i, repo in enumerate(repos):
        req = TrainingRequest(tenant=f"n{i}", dataset=str(DATA / "acme.jsonl"), hub_model_id=repo, scheduled=True)
        sub = jobspec.build_submission(req, backend_kind="local", token=backend.api.token)
        backend.api.create_scheduled_job(**ship(backend.api, sub, NAMESPACE).scheduled_kwargs("0 3 * * *"),
                                         namespace=NAMESPACE)
    store = OnCallStore(tmp_path / "oncall.sqlite")
    counting = _Counting(backend.api)
    watch = Watcher(counting, cfg, namespace=NAMESPACE, store=store, clock=lambda: datetime.now(UTC))
    report = watch.check()
    assert counting.read == [repos[0]], counting.read  # the others: not on the owner's listing
    kept = store.live_reads()
    assert sorted(kept) == repos and kept[repos[0]].commit == info.oid
    assert all(kept[r].commit is None for r in repos[1:]) and report.stale_live == []
