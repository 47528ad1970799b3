"""A tenant's adapter versions, read from its Hub repo, and the live tag serving loads.

The training recipes (training/jobkit/run.py) push each run to a branch of its own,
`runs/<run name>`, with a `manifest.json` beside the weights, and commit a passing run's final
weights to `main` with the title `<run name>: PASS ...`; the `live` tag (configurable) marks the
version serving loads. From those facts alone (refs, commits, manifests, through `HfApi`):

* a **version** is a passing run landed on `main` (its commit there), a failed run (its branch,
  whose manifest says why), or a partial one (a branch with checkpoints and no manifest: killed
  by its timeout, still running, or its final push failed). Only a passing version on `main`
  can be live (:func:`promote` refuses the others);
* **promote** moves the live tag to a version; **roll back** moves it to the passing version
  before the live one.

No Textual, no training stack: the TUI, `console adapters` and on-call read the same functions.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from typing import Any

LIVE_TAG = "live"
RUN_BRANCH_PREFIX = "runs/"
MAX_VERSIONS = 30
"""The newest versions read (one manifest download each)."""

_LANDED = re.compile(r"^(?P<run>[A-Za-z0-9._-]+): PASS\b")


class AdapterError(Exception):
    """A repo that cannot be read, or a promotion the rules refuse; the message says which."""


class NoAdapterRepo(AdapterError):
    """The repo does not exist (yet): no run of the tenant pushed to it."""


def repo_for(tenant: str, requests: Any, template: str | None) -> str | None:
    """A tenant's adapter repo: the `hub_model_id` of the first of its `requests` (its scheduled
    job's, then its runs') that names one, else the config's `defaults.hub_model_id` template
    with `{tenant}` filled in, else None."""
    from console import jobspec

    for req in requests:
        if req is not None and req.tenant == tenant and req.hub_model_id:
            return req.hub_model_id
    return jobspec.hub_model_id_for(tenant, template)


@dataclass(frozen=True)
class AdapterVersion:
    run: str
    verdict: str
    """PASS, FAIL, or partial (checkpoints pushed, no final record)."""
    commit: str
    """The commit serving would load: on main for a passing run, the branch head otherwise."""
    where: str
    """`main` or the run's branch."""
    time: str
    """When the commit was made (ISO 8601, UTC)."""
    job_id: str | None = None
    failure: str | None = None
    first_loss: float | None = None
    last_loss: float | None = None
    metric: str | None = None
    metric_last: float | None = None
    steps: int | None = None
    """The steps the run reached: its end's count, or for a run with no end (killed, still
    running) the step of the newest checkpoint it pushed."""
    live: bool = False
    steps_total: int | None = None
    checkpoint_step: int | None = None
    """The step of the newest checkpoint the run pushed to its branch (its manifest says)."""
    dataset_revision: str | None = None
    base_model_revision: str | None = None
    evaluation: dict[str, Any] | None = None
    """A run under `promote = "on_eval"`: its evaluation record (training/evaluate_adapter.py's
    `evaluation.json` on its branch): both scores, and whether it was promoted."""

    @property
    def short(self) -> str:
        return self.commit[:8]

    def figures(self) -> str:
        """`loss 2.31 -> 1.05, ndcg 0.41` (what a confirmation names)."""
        parts = []
        if self.first_loss is not None and self.last_loss is not None:
            parts.append(f"loss {self.first_loss:.4g} -> {self.last_loss:.4g}")
        if self.metric and self.metric_last is not None:
            parts.append(f"{self.metric} {self.metric_last:.4g}")
        return ", ".join(parts) or "no figures"

    def progress(self) -> str:
        """`step 24/40, checkpoint 24` for a run with no end of its own, else ``."""
        if self.verdict != "partial" or self.steps is None:
            return ""
        of = f"/{self.steps_total}" if self.steps_total else ""
        ckpt = f", checkpoint {self.checkpoint_step}" if self.checkpoint_step else ", no checkpoint"
        return f"step {self.steps}{of}{ckpt}"

    def evaluated(self) -> str:
        """`eval loss 1.02 vs live 0.98 (acme-first): kept` for an evaluated run, `awaiting evaluation`
        for an on_eval run not evaluated yet, else ``."""
        return evaluated(self.evaluation) if self.evaluation is not None else ""

    def describe(self) -> str:
        return f"{self.short} {self.run} {self.verdict} ({self.figures()})"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Versions:
    repo_id: str
    live_tag: str
    live_commit: str | None
    versions: list[AdapterVersion] = field(default_factory=list)
    """Newest first."""

    @property
    def live(self) -> AdapterVersion | None:
        return next((v for v in self.versions if v.live), None)

    def find(self, ref: str) -> AdapterVersion | None:
        """A version by commit (a unique start of it) or run name."""
        ref = ref.strip()
        by_run = [v for v in self.versions if v.run == ref]
        if by_run:
            return by_run[0]
        hits = [v for v in self.versions if ref and v.commit.startswith(ref.lower())]
        return hits[0] if len(hits) == 1 else None

    def previous_pass(self) -> AdapterVersion | None:
        """The passing version before the live one (what a roll back goes to), or None."""
        passing = [v for v in self.versions if v.verdict == "PASS" and v.where == "main"]
        live = self.live
        if live is None or live not in passing:
            return None
        at = passing.index(live)
        return passing[at + 1] if at + 1 < len(passing) else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "repo_id": self.repo_id,
            "live_tag": self.live_tag,
            "live_commit": self.live_commit,
            "versions": [v.as_dict() for v in self.versions],
        }


def _first_line(exc: BaseException) -> str:
    """The first line of an error's message (its type when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _manifest(api: Any, repo_id: str, revision: str) -> dict[str, Any] | None:
    """The manifest.json at a revision, or None when there is none."""
    from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError

    try:
        path = api.hf_hub_download(repo_id, "manifest.json", revision=revision)
    except (EntryNotFoundError, RevisionNotFoundError):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read(1_000_000))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def own_manifest(manifest: dict | None, run: str) -> dict | None:
    """`manifest` when it is `run`'s own: a run's branch opens from main's head, and one pushed
    before the recipes wrote their own first still holds the previous passing run's."""
    return manifest if isinstance(manifest, dict) and manifest.get("run_name") == run else None


def _version(run: str, verdict: str, commit: str, where: str, when: Any, manifest: dict | None,
             live_commit: str | None) -> AdapterVersion:
    m = manifest or {}
    failure = m.get("failure") if isinstance(m.get("failure"), str) else None
    steps = m.get("steps")
    extra = dict(steps_total=_int(m.get("steps_total")), checkpoint_step=_int(m.get("checkpoint_step")),
                 dataset_revision=_text(m.get("dataset_revision")),
                 base_model_revision=_text(m.get("base_model_revision")))
    return AdapterVersion(
        run=run, verdict=verdict, commit=commit, where=where,
        time=when.isoformat() if hasattr(when, "isoformat") else str(when or ""),
        job_id=m.get("job_id") if isinstance(m.get("job_id"), str) else None,
        failure=failure.split(":", 1)[0] if failure else None,
        first_loss=_number(m.get("first_loss")), last_loss=_number(m.get("last_loss")),
        metric=m.get("metric") if isinstance(m.get("metric"), str) else None,
        metric_last=_number(m.get("metric_last")),
        steps=steps if isinstance(steps, int) and not isinstance(steps, bool) else None,
        live=commit == live_commit, **extra,
    )  # fmt: skip


EVALUATION = "evaluation.json"
"""A run's evaluation record on its branch (training/evaluate_adapter.py)."""


def _score(side: Any, key: str) -> float | None:
    return _number(side.get(key)) if isinstance(side, dict) else None


def evaluated(record: dict[str, Any], *, short: bool = False) -> str:
    """An evaluation record in words: both scores (loss, and the recipe's metric) and the outcome
    (`short`: `1.02 vs 0.98 kept`, for a table's cell)."""
    if not record:
        return "awaiting" if short else "awaiting evaluation"
    outcome = "promoted" if record.get("promoted") is True else "kept"
    cand, live = record.get("candidate"), record.get("live")
    c_loss, l_loss = _score(cand, "loss"), _score(live, "loss")
    if short:
        return f"{c_loss:.3g} vs {l_loss:.3g} {outcome}" if c_loss is not None and l_loss is not None else outcome
    if c_loss is None or l_loss is None:
        why = record.get("reason") if isinstance(record.get("reason"), str) else ""
        return f"{outcome}: {why[:80]}" if why else outcome
    live_run = live.get("run") if isinstance(live.get("run"), str) else str(live.get("commit") or "")[:8]
    text = f"eval loss {c_loss:.4f} vs live {l_loss:.4f} ({live_run[:40]})"
    metric = record.get("metric") if isinstance(record.get("metric"), str) else None
    c_m, l_m = _score(cand, metric or ""), _score(live, metric or "")
    if metric and c_m is not None and l_m is not None:
        text += f", {metric[:30]} {c_m:.3f} vs {l_m:.3f}"
    return f"{text}: {outcome}"


def _evaluation(api: Any, repo_id: str, run: str) -> dict[str, Any]:
    """The run's evaluation record; {} when it has none (yet)."""
    from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError

    try:
        path = api.hf_hub_download(repo_id, EVALUATION, revision=f"{RUN_BRANCH_PREFIX}{run}")
        with open(path, encoding="utf-8") as fh:
            data = json.loads(fh.read(1_000_000))
    except (EntryNotFoundError, RevisionNotFoundError, OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("run_name") == run else {}


def list_versions(api: Any, repo_id: str, *, live_tag: str = LIVE_TAG, limit: int = MAX_VERSIONS) -> Versions:
    """The repo's versions, newest first, with the live one marked. Raises AdapterError."""
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        refs = api.list_repo_refs(repo_id)
        live_commit = next((t.target_commit for t in refs.tags if t.name == live_tag), None)
        versions: list[AdapterVersion] = []
        landed: set[str] = set()
        for commit in api.list_repo_commits(repo_id, revision="main"):
            found = _LANDED.match(commit.title or "")
            if not found:
                continue
            run = found.group("run")
            landed.add(run)  # every landed run, so its branch is not read as a run that never landed
            if len(versions) >= limit:
                continue  # older than the newest `limit`: no manifest read
            manifest = _manifest(api, repo_id, commit.commit_id)
            version = _version(run, "PASS", commit.commit_id, "main", commit.created_at, manifest, live_commit)
            if (manifest or {}).get("promote") == "on_eval":  # its evaluation decides whether it goes live
                version = replace(version, evaluation=_evaluation(api, repo_id, run))
            versions.append(version)
        for branch in refs.branches:
            if not branch.name.startswith(RUN_BRANCH_PREFIX):
                continue
            run = branch.name[len(RUN_BRANCH_PREFIX):]
            if run in landed:
                continue
            manifest = own_manifest(_manifest(api, repo_id, branch.target_commit), run)
            # a run not landed on main failed, or has no final record (a PASS never landed: its push failed)
            verdict = "FAIL" if (manifest or {}).get("verdict") == "FAIL" else "partial"
            head = next(iter(api.list_repo_commits(repo_id, revision=branch.target_commit)), None)
            versions.append(_version(run, verdict, branch.target_commit, branch.name,
                                     head.created_at if head else "", manifest, live_commit))
    except RepositoryNotFoundError:
        raise NoAdapterRepo(f"no adapter repo {repo_id} (no run pushed to it yet?)") from None
    except HfHubHTTPError as exc:
        raise AdapterError(f"cannot read {repo_id}: {_first_line(exc)}") from None
    versions.sort(key=lambda v: v.time, reverse=True)
    return Versions(repo_id=repo_id, live_tag=live_tag, live_commit=live_commit, versions=versions[:limit])


def check_promotable(versions: Versions, target: AdapterVersion) -> None:
    """Raises AdapterError unless `target` may become live: a passing run landed on main."""
    if target.verdict != "PASS" or target.where != "main":
        why = target.failure or ("no final record" if target.verdict == "partial" else target.verdict)
        raise AdapterError(
            f"{target.run} ({target.short}) cannot be live: it is {target.verdict} ({why}); "
            "only a passing run landed on main can be"
        )
    if target.live:
        raise AdapterError(f"{target.run} ({target.short}) is already live")


def promote(api: Any, versions: Versions, target: AdapterVersion) -> None:
    """Move the live tag to `target` (checked first). Raises AdapterError."""
    from huggingface_hub.errors import HfHubHTTPError

    check_promotable(versions, target)
    try:
        if versions.live_commit is not None:
            api.delete_tag(versions.repo_id, tag=versions.live_tag)
        api.create_tag(versions.repo_id, tag=versions.live_tag, revision=target.commit,
                       tag_message=f"{target.run}: promoted")
    except HfHubHTTPError as exc:
        raise AdapterError(f"cannot move {versions.live_tag} on {versions.repo_id}: {_first_line(exc)}") from None


def confirmation(versions: Versions, target: AdapterVersion) -> str:
    """What the engineer confirms: both versions and their figures."""
    current = versions.live
    before = current.describe() if current else "nothing"
    return f"{versions.repo_id}: move {versions.live_tag} from {before} to {target.describe()}?"


CHECKPOINT_DIR = "last-checkpoint"
"""Where a run's latest full checkpoint is on its branch (the recipes' hub_strategy="checkpoint")."""


@dataclass(frozen=True)
class Checkpoint:
    """The last checkpoint a run pushed to its branch: what a resume starts from."""

    repo_id: str
    run: str
    step: int
    steps_total: int | None
    commit: str
    refused: str | None = None
    """Why the run is not resumed (its manifest's `not_resumable`: it failed on its training, a NaN
    loss...), None when it may be."""

    @property
    def branch(self) -> str:
        return f"{RUN_BRANCH_PREFIX}{self.run}"

    @property
    def done_fraction(self) -> float:
        """The share of the run already trained (0 when the run's length is not known)."""
        if not self.steps_total or self.steps_total <= 0:
            return 0.0
        return min(max(self.step / self.steps_total, 0.0), 0.99)

    def describe(self) -> str:
        of = f"/{self.steps_total}" if self.steps_total else ""
        return f"step {self.step}{of} at hf://{self.repo_id}@{self.branch}/{CHECKPOINT_DIR} ({self.commit[:8]})"

    @property
    def resumable(self) -> bool:
        return self.refused is None


def last_checkpoint(api: Any, repo_id: str, run: str) -> Checkpoint | None:
    """The last checkpoint `run` pushed (its branch's last-checkpoint/trainer_state.json), or None
    when it pushed none or the repo cannot be read; `refused` says why it is not resumed when the
    run's own manifest says so (the recipes' `--resume-from` refuses the same runs)."""
    from huggingface_hub.errors import HfHubHTTPError

    branch = f"{RUN_BRANCH_PREFIX}{run}"
    try:
        refs = api.list_repo_refs(repo_id)
        head = next((b.target_commit for b in refs.branches if b.name == branch), None)
        if head is None:
            return None
        path = api.hf_hub_download(repo_id, f"{CHECKPOINT_DIR}/trainer_state.json", revision=head)
        with open(path, encoding="utf-8") as fh:
            state = json.loads(fh.read(4_000_000))
    except (HfHubHTTPError, OSError, ValueError):
        return None
    step = state.get("global_step") if isinstance(state, dict) else None
    if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
        return None
    total = state.get("max_steps")
    total = total if isinstance(total, int) and not isinstance(total, bool) and total > 0 else None
    try:
        manifest = own_manifest(_manifest(api, repo_id, head), run) or {}
    except HfHubHTTPError:
        manifest = {}
    refused = _text(manifest.get("not_resumable")) if manifest.get("verdict") == "FAIL" else None
    return Checkpoint(repo_id=repo_id, run=run, step=step, steps_total=total, commit=head, refused=refused)


def live_since(api: Any, repo_id: str, *, live_tag: str = LIVE_TAG) -> tuple[str, datetime] | None:
    """The live version's commit and when it was made (two requests, no manifest read), or None
    when the repo or its live tag does not exist. Raises AdapterError when it cannot be read."""
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        refs = api.list_repo_refs(repo_id)
        commit = next((t.target_commit for t in refs.tags if t.name == live_tag), None)
        if commit is None:
            return None
        head = next(iter(api.list_repo_commits(repo_id, revision=commit)), None)
    except RepositoryNotFoundError:
        return None
    except HfHubHTTPError as exc:
        raise AdapterError(f"cannot read {repo_id}: {_first_line(exc)}") from None
    if head is None or head.created_at is None:
        return None
    return commit, head.created_at
