"""A run's own record on its Hub branch: what it trained on, how far it got, whether it can be resumed.

* **What it trained on** (:func:`trained_on`): the commit of the dataset repo and of the base
  model repo as resolved when training starts (`dataset_revision`, `dataset_commit` with its title
  and time, `base_model_revision`); a local dataset file is named by the SHA-256 of its bytes. The
  manifest carries them, so a run that broke on a new commit of its dataset says which one.
* **Its own manifest from the start** (:func:`open_run`): the run's branch opens from `main`'s
  head, which holds the last passing run's `manifest.json`; the branch's first commit replaces it
  with this run's (`"verdict": null`, step 0), so a run killed before its end never reads as the
  one before it.
* **One commit per checkpoint** (:class:`CheckpointPusher`): each save pushes the weights, the
  full checkpoint (`last-checkpoint/`: optimizer, scheduler, step) and the manifest with the
  steps reached, together. A run killed at any moment leaves a branch whose head holds the newest
  checkpoint it pushed, weights and state of the same step: never weights without the state a
  resume needs.
* **Resumable or not** (:func:`check_resumable`): a run that ended with a verdict on its training
  (a NaN loss, zero gradients, divergence, a flat loss...) is not resumed: its checkpoints hold the
  weights that led there, and it ran to its end.

Standard library only at import time (huggingface_hub and transformers inside the functions).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from jobkit.multigpu import is_main_process
from jobkit.run import CHECKPOINT_DIR, Destination, Refusal, now_iso, open_run_branch, say

MANIFEST = "manifest.json"
STATE_FILES = frozenset({"optimizer.pt", "scheduler.pt", "scaler.pt", "trainer_state.json", "training_args.bin"})
"""A checkpoint's training state: pushed under last-checkpoint/ only, never beside the weights."""
NOT_RESUMABLE = {
    "nan_loss": "its loss went NaN: its checkpoints hold the weights that led there; rerun it fresh "
                "(a lower --learning-rate?)",
    "zero_grad": "it ran to its end with zero gradients: nothing is left to resume; rerun it fresh",
    "diverged": "its loss diverged and it ran to its end: nothing is left to resume; rerun it fresh",
    "flat_loss": "it ran to its end and its loss did not fall: nothing is left to resume; rerun it fresh",
    "zero_lr": "it ran to its end at a learning rate of 0: nothing is left to resume; rerun it fresh",
    "no_loss": "it ran to its end without a loss: nothing is left to resume; rerun it fresh",
    "metric_flat": "it ran to its end and its held-out metric did not rise: nothing is left to resume",
    "no_metric": "it ran to its end without its held-out metric: nothing is left to resume",
}  # fmt: skip
"""Failures judged on a run's training (`LossMonitor.verdict`): why such a run is not resumed."""


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def file_revision(path: Path) -> str:
    """A local file named by its bytes: `sha256:<first 16 hex digits>`."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()[:16]}"


def trained_on(base_model: str, dataset: str) -> dict[str, Any]:
    """The revisions a run trains on, resolved now (its start): the manifest's `dataset_revision`,
    `dataset_commit` ({sha, title, time}) and `base_model_revision`. None where there is no
    revision to name (the tiny random base, a local folder, HF_HUB_OFFLINE) or the Hub did not
    answer (said in the log). Prints one `trained on` line."""
    record: dict[str, Any] = {"dataset_revision": None, "dataset_commit": None, "base_model_revision": None}
    local = Path(dataset).expanduser()
    if local.is_file():
        record["dataset_revision"] = file_revision(local)
    elif not _offline():
        try:
            from huggingface_hub import HfApi

            api = HfApi()
            sha = api.dataset_info(dataset).sha
            head = next(iter(api.list_repo_commits(dataset, repo_type="dataset", revision=sha)), None)
            record["dataset_revision"] = sha
            record["dataset_commit"] = {
                "sha": sha,
                "title": head.title if head is not None else None,
                "time": head.created_at.isoformat() if head is not None and head.created_at else None,
            }
        except Exception as e:  # noqa: BLE001 - the record says nothing rather than stop the run
            first = str(e).splitlines()[0] if str(e) else ""
            say(f"dataset revision of {dataset} unknown: {type(e).__name__}: {first}")
    if not Path(base_model).expanduser().is_dir() and "/" in base_model and not _offline():
        try:
            from huggingface_hub import HfApi

            record["base_model_revision"] = HfApi().model_info(base_model).sha
        except Exception as e:  # noqa: BLE001
            say(f"base model revision of {base_model} unknown: {type(e).__name__}")
    say(f"trained on dataset={dataset}@{record['dataset_revision'] or '-'} "
        f"base_model={base_model}@{record['base_model_revision'] or '-'}")
    return record


def check_resumable(manifest: dict[str, Any] | None, run: str) -> None:
    """Raises Refusal (`not_resumable`) when `run`'s own manifest says it failed on its training."""
    if not isinstance(manifest, dict) or manifest.get("run_name") != run:
        return  # no record of its own (killed before it wrote one): its checkpoint decides
    if manifest.get("verdict") == "PASS":
        raise Refusal("not_resumable", f"run {run} passed: nothing is left to resume")
    failure = manifest.get("failure") if isinstance(manifest.get("failure"), str) else ""
    code = failure.split(":", 1)[0].strip()
    why = manifest.get("not_resumable") or NOT_RESUMABLE.get(code)
    if manifest.get("verdict") == "FAIL" and isinstance(why, str) and why:
        raise Refusal("not_resumable", f"run {run} failed {code}: {why}")


def _commit_manifest(dest: Destination, record: dict[str, Any], message: str) -> None:
    from huggingface_hub import HfApi

    HfApi().upload_file(
        repo_id=dest.hub_model_id,
        path_or_fileobj=(json.dumps(record, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        path_in_repo=MANIFEST,
        revision=dest.hub_branch,
        commit_message=message,
    )


class CheckpointPusher:
    """Pushes each checkpoint the trainer saves to the run's branch as one commit (the weights, the
    full checkpoint under last-checkpoint/, the manifest with the steps reached), in the background,
    one push at a time. A save made while a push runs waits for it, staged (hard links: the trainer
    may delete its folder meanwhile); a newer save replaces a waiting one, so the newest checkpoint
    is always pushed and training never waits on the network. :meth:`wait` before the final push."""

    def __init__(self, dest: Destination, record: dict[str, Any]) -> None:
        self.dest = dest
        self.record = dict(record)
        self.pushed_step = 0
        self._lock = threading.RLock()  # a push that ends at once calls back in the same thread
        self._running: Any = None  # the push in flight (a Future)
        self._pending: tuple[Path, list[Any], int] | None = None  # the newest save waiting for it
        self._idle = threading.Event()
        self._idle.set()
        self._api: Any = None

    def wait(self) -> None:
        """Every push finished (an error is said, not raised: the run's verdict stands)."""
        self._idle.wait()

    def _stage(self, folder: Path, step: int, steps_total: int | None) -> tuple[Path, list[Any], int]:
        from huggingface_hub import CommitOperationAdd

        staged = self.dest.output_dir / f"_push-{step}"
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir(parents=True)
        ops = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = path.relative_to(folder)
            copy = staged / rel
            copy.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, copy)
            except OSError:
                shutil.copy2(path, copy)
            ops.append(CommitOperationAdd(path_in_repo=f"{CHECKPOINT_DIR}/{rel.as_posix()}", path_or_fileobj=str(copy)))
            if rel.name not in STATE_FILES and not rel.name.startswith("rng_state"):  # the model, loadable
                ops.append(CommitOperationAdd(path_in_repo=rel.as_posix(), path_or_fileobj=str(copy)))
        manifest = {**self.record, "steps": step, "steps_total": steps_total, "checkpoint_step": step,
                    "checkpoint_at": now_iso()}
        ops.append(CommitOperationAdd(path_in_repo=MANIFEST,
                                      path_or_fileobj=(json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()))
        return staged, ops, step

    def push(self, folder: Path, step: int, steps_total: int | None) -> None:
        staged = self._stage(folder, step, steps_total)
        with self._lock:
            if self._running is not None:
                if self._pending is not None:
                    shutil.rmtree(self._pending[0], ignore_errors=True)
                self._pending = staged
                return
            self._start(staged)

    def _start(self, staged: tuple[Path, list[Any], int]) -> None:
        """Start a push (with the lock held)."""
        from huggingface_hub import HfApi

        if self._api is None:
            self._api = HfApi()
        folder, ops, step = staged
        self._idle.clear()
        self._running = self._api.create_commit(
            repo_id=self.dest.hub_model_id, operations=ops, revision=self.dest.hub_branch,
            commit_message=f"{self.dest.run_name}: checkpoint step {step}", run_as_future=True,
        )
        self._running.add_done_callback(lambda future: self._done(future, folder, step))

    def _done(self, future: Any, folder: Path, step: int) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        error = future.exception()
        if error is not None:
            first = str(error).splitlines()[0] if str(error) else ""
            say(f"checkpoint push of step {step} failed: {type(error).__name__}: {first}")
        else:
            self.pushed_step = max(self.pushed_step, step)
        with self._lock:
            self._running = None
            pending, self._pending = self._pending, None
            if pending is not None:
                self._start(pending)
            else:
                self._idle.set()

    def callback(self) -> Any:
        """The transformers `TrainerCallback` that pushes each save."""
        from transformers import TrainerCallback

        pusher = self

        class PushCheckpoints(TrainerCallback):
            def on_save(self, targs, state, control, **kwargs):  # type: ignore[no-untyped-def]
                folder = Path(targs.output_dir) / f"checkpoint-{state.global_step}"
                if folder.is_dir():
                    pusher.push(folder, int(state.global_step), int(state.max_steps or 0) or None)

            def on_train_end(self, targs, state, control, **kwargs):  # type: ignore[no-untyped-def]
                pusher.wait()

        return PushCheckpoints()


def open_run(dest: Destination, *, private: bool, record: dict[str, Any]) -> list[Any]:
    """Open the run's branch (:func:`jobkit.run.open_run_branch`) with this run's own manifest as
    its first commit; returns the trainer callbacks that push its checkpoints (none without a Hub
    repo, and none on a sharded run's other ranks: only the first rank pushes)."""
    if dest.hub_model_id is None or not is_main_process():
        return []
    open_run_branch(dest, private=private)
    start = {**record, "verdict": None, "failure": None, "steps": 0, "checkpoint_step": None,
             "started_at": record.get("started_at") or now_iso()}
    _commit_manifest(dest, start, f"{dest.run_name}: started")
    return [CheckpointPusher(dest, start).callback()]


def read_manifest(path: Path) -> dict[str, Any] | None:
    """A downloaded manifest.json, or None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
