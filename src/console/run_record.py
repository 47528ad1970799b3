"""What a run trained on, and what changed since the last passing run.

The recipes (training/jobkit/hub_runs.py) record in each run's `manifest.json` the revisions it
trained on, resolved when training started: `dataset_revision` (the dataset repo's commit, or
`sha256:...` of a local file), `dataset_commit` ({sha, title, time}) and `base_model_revision`. The
run's own branch (`runs/<run>`) carries its manifest from its first commit; a passing run's is on
`main` too. From those alone:

* :func:`trained_on` — the run's revisions, in words (`dataset console/acme@1a2b3c4d "nightly
  export" 2026-12-07 05:00 UTC, base console/tiny-causal-lm@9f8e7d6c`);
* :func:`dataset_change` — "dataset changed since the last PASS (commit, title, time)" when the
  run's dataset revision is not the one the last passing run before it trained on.

Read through the `HfApi` given (three requests at most); blocking, no Textual. Everything read
is untrusted: returned as plain text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from console.adapters import _LANDED, RUN_BRANCH_PREFIX, _manifest, own_manifest
from console.oncall.escapes import plain


@dataclass(frozen=True)
class RunRecord:
    """A run's manifest and, when its dataset changed since the last PASS, that PASS's."""

    run: str
    manifest: dict[str, Any]
    last_pass: dict[str, Any] | None = None

    def trained_on(self) -> str:
        return trained_on(self.manifest)

    def dataset_change(self) -> str | None:
        return dataset_change(self.manifest, self.last_pass)


def _when(text: Any) -> str:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    except ValueError:
        return plain(text, 40) or "-"


def _short(rev: Any) -> str:
    text = plain(rev, 80)
    return text if text.startswith("sha256:") else text[:8]


def _commit_words(manifest: dict[str, Any]) -> str:
    """`1a2b3c4d "nightly export", 2026-12-07 05:00 UTC` (what is known of the dataset's commit)."""
    commit = manifest.get("dataset_commit") if isinstance(manifest.get("dataset_commit"), dict) else {}
    parts = [_short(manifest.get("dataset_revision"))]
    if commit.get("title"):
        parts.append(f'"{plain(commit["title"], 80)}"')
    words = " ".join(parts)
    return f"{words}, {_when(commit['time'])}" if commit.get("time") else words


def trained_on(manifest: dict[str, Any]) -> str:
    """The dataset and base model revisions a run trained on, in words ("-" for what it did not record)."""
    dataset = plain(manifest.get("dataset"), 200) or "-"
    base = plain(manifest.get("base_model"), 200) or "-"
    data_rev = _commit_words(manifest) if manifest.get("dataset_revision") else "revision not recorded"
    base_rev = _short(manifest["base_model_revision"]) if manifest.get("base_model_revision") else "-"
    return f"dataset {dataset} @ {data_rev}; base model {base} @ {base_rev}"


def dataset_change(manifest: dict[str, Any], last_pass: dict[str, Any] | None) -> str | None:
    """`dataset changed since the last PASS (<commit> "<title>", <time>)`, or None when the run
    trained on the last PASS's revision, or either did not record one."""
    if last_pass is None:
        return None
    now, then = manifest.get("dataset_revision"), last_pass.get("dataset_revision")
    if not now or not then or now == then:
        return None
    return f"dataset changed since the last PASS ({_commit_words(manifest)})"


def read_record(api: Any, repo_id: str, run: str) -> RunRecord | None:
    """The run's own manifest (its branch's head) and the manifest of the last run that passed
    before it started (on main); None when the run has no manifest of its own."""
    manifest = own_manifest(_manifest(api, repo_id, f"{RUN_BRANCH_PREFIX}{run}"), run)
    if manifest is None:
        return None
    started = str(manifest.get("started_at") or "")
    last_pass = None
    for commit in api.list_repo_commits(repo_id, revision="main"):
        found = _LANDED.match(commit.title or "")
        if not found or found.group("run") == run:
            continue
        when = commit.created_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if commit.created_at else ""
        if started and when and when > started:
            continue  # passed after this run started: not what it followed
        last_pass = _manifest(api, repo_id, commit.commit_id)
        break
    return RunRecord(run=run, manifest=manifest, last_pass=last_pass)


def record_for_job(api: Any, job: Any, absent: Callable[[str], bool] | None = None) -> RunRecord | None:
    """`read_record` for a console job (its request's repo, its run label); None for a job that
    pushes to no repo, whose repo `absent` says does not exist, or when the Hub cannot say."""
    from console import jobspec

    request = jobspec.read_request(job)
    run = jobspec.trackio_run_name(job.id, jobspec.labels_of(job))
    if request is None or not request.hub_model_id or not run:
        return None
    if absent is not None and absent(request.hub_model_id):
        return None
    try:
        return read_record(api, request.hub_model_id, run)
    except Exception:  # noqa: BLE001 - the Hub does not answer: nothing to add
        return None
