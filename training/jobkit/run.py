"""The rules every training run on HF Jobs follows, whatever the recipe (SFT, DPO, KTO, embeddings).

* The end of a run is one machine-readable line, always the last on stdout, and an exit status:

      VERDICT: PASS run=<name> steps=<n> first_loss=<x> last_loss=<y> adapter=<where>
      VERDICT: FAIL <code>: <reason>

  0 for PASS, 1 for a run that failed, 2 for a run that refused to start (:func:`run_job`). A
  refusal (:class:`Refusal`) carries a short code (`bad_arguments`, `hf_token_missing`,
  `no_destination`, `run_exists`, `bad_dataset`) and a reason; argument errors become one too.
* Where the weights go is decided before anything heavy happens (:func:`resolve_destination`).
  The container of a job is thrown away when the job ends, so with `--hub-model-id` the run pushes
  to the Hub (`push_to_hub=True`, `save_strategy="steps"`, `save_steps=0.1`, each save one
  commit of `jobkit.hub_runs`: a timeout keeps what was pushed) and refuses to start without `HF_TOKEN`.
  Each run pushes to a branch of its own, `runs/<run-name>` (:func:`open_run_branch`), and only a
  passing run's final weights land on `main`, where serving reads: a failed run's checkpoints never
  overwrite a tenant's adapter, and stay on its branch (with its manifest) for a look or a resume;
  without it the adapter goes to `$CONSOLE_ARTIFACTS_DIR/<run-name>/`; with neither the run
  refuses to start. A Trackio Space needs `HF_TOKEN` too.
* Metrics go to Trackio (`report_to="trackio"`). A loss monitor (:class:`LossMonitor`) raises an
  alert on NaN/inf loss (and stops training), on divergence (loss well above its running best) and
  on a stall (the mean loss of N logged steps no lower than of the N before). At the end it judges the run
  (:meth:`LossMonitor.verdict`): NaN, zero gradients, divergence, or a loss that did not
  meaningfully fall fail it, and a failed run gets an ERROR alert named after its reason.
  :func:`monitor_callback` prints `progress` and `ALERT` lines and sends the alerts to Trackio with
  `trackio.alert`:

      progress step=<i>/<n> loss=<x> lr=<x> grad_norm=<x> epoch=<x> elapsed=<s>s
      ALERT level=<INFO|WARN|ERROR> kind=<kind> step=<i> title="<t>": <text>

  kinds: `nan` (ERROR), `divergence`, `stall` (WARN) while training; `zero_grad`, `diverged`,
  `flat_loss`, `no_loss`, `metric_flat`, `no_metric` (ERROR) when the run ends with that verdict.
* A recipe that evaluates on a held-out split names the metric that must rise
  (:meth:`LossMonitor.watch_metric`): every evaluation prints an `eval` line, and a run whose last
  value is not above its first (the evaluation before training) fails `metric_flat`:

      eval step=<i> <metric>=<x>

Standard library only at import time: a refusal happens in well under a second, before torch,
transformers or trackio are imported (the functions that need them import them).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from validate_dataset import REPO_ID_RE

from jobkit.multigpu import is_main_process, rank_finish

EXIT_PASS, EXIT_FAILED, EXIT_REFUSED = 0, 1, 2
ARTIFACTS_ENV = "CONSOLE_ARTIFACTS_DIR"
INJECT_NAN_ENV = "CONSOLE_INJECT_NAN_AT_STEP"
STEP_DELAY_ENV = "CONSOLE_STEP_DELAY_S"  # testing: seconds slept after each step (a slow GPU)
STEP_HOLD_ENV = "CONSOLE_STEP_HOLD_FILE"  # testing: once a checkpoint is saved, no step ends while it exists
CHECKPOINT_DIR = "last-checkpoint"  # where the latest full checkpoint is pushed on the run's branch
RUN_BRANCH_PREFIX = "runs/"  # each run's own branch of the Hub repo: runs/<run-name>
LIVE_TAG = "live"  # the tag of the Hub repo serving loads: moved only to a passing run's commit
PROMOTE_POLICIES = ("manual", "on_pass", "on_eval")
DEFAULT_TRACKIO_PROJECT = "console"
RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}$")
# The end-of-run verdict (LossMonitor.verdict; the thresholds and why: training/README.md).
DEFAULT_MIN_LOSS_DROP = 0.01  # a run that learns falls well over 1% (the tiny model: 3.5% in 12 steps)
FLAT_MIN_POINTS = 5  # fewer logged losses are too few to tell a flat loss from noise
ZERO_GRAD_NORM = 1e-8  # a gradient norm at or below this is 0 (live runs log 0.002 and up)
DIVERGED_GIVEBACK = 0.5
"""A loss above divergence_factor x its best has diverged only if it also gave back at least this
share of what it had gained from where it began: a contrastive loss that fell from 3.4 to 0.06
and sits at 0.18 is noise near zero (3x its best, 3% of its gain), not a run coming apart."""
VERDICT_TITLES = {
    "zero_grad": "Run failed: zero gradients",
    "diverged": "Run failed: loss diverged",
    "flat_loss": "Run failed: the loss did not fall",
    "no_loss": "Run failed: no loss logged",
    "metric_flat": "Run failed: the held-out metric did not rise",
    "no_metric": "Run failed: the held-out metric was never evaluated",
    "zero_lr": "Run failed: the learning rate was 0",
    "reward_flat": "Run failed: the reward did not rise",
    "no_reward": "Run failed: no reward logged",
    "at_chance": "Run failed: held-out accuracy at chance",
}


# ----------------------------------------------------------------------------- output


def say(line: str) -> None:
    """Print one log line and flush, so a streaming log viewer sees it at once (the first rank
    only, when the run is sharded over several processes)."""
    if is_main_process():
        print(line, flush=True)


def fmt_loss(value: float | None) -> str:
    if value is None:
        return "none"
    if not math.isfinite(value):
        return str(value).lower()
    return f"{value:.4f}"


def now_iso(seconds: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


# ----------------------------------------------------------------------------- refusals, verdict


class Refusal(Exception):
    """The run must not start; carries a short machine code, a human reason and detail lines."""

    def __init__(self, code: str, message: str, details: list[str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or []


class RefusingParser(argparse.ArgumentParser):
    """argparse that turns usage errors into a refusal (so the log still ends with a VERDICT)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise Refusal("bad_arguments", message)


P = TypeVar("P")


def run_job(preflight: Callable[[], P], run: Callable[[P], tuple[bool, str]]) -> int:
    """Preflight, then the run; whatever happens the VERDICT line comes last. Returns the exit
    status: 0 PASS, 1 a failed run (`run` returned False, or raised), 2 a refusal.

    `run` returns (passed, the rest of the VERDICT line).
    """
    try:
        plan = preflight()
        passed, tail = run(plan)
    except Refusal as e:
        print(f"error: {e.message}", file=sys.stderr, flush=True)
        for line in e.details:
            print(f"  {line}", file=sys.stderr, flush=True)
        say(f"VERDICT: FAIL {e.code}: {e.message}")
        return EXIT_REFUSED
    except Exception as e:
        traceback.print_exc()
        sys.stderr.flush()
        first = str(e).splitlines()[0] if str(e) else ""
        say(f"VERDICT: FAIL exception: {type(e).__name__}: {first}")
        return EXIT_FAILED
    sys.stderr.flush()
    if passed:
        say(f"VERDICT: PASS {tail}")
        return EXIT_PASS
    say(f"VERDICT: FAIL {tail}")
    return EXIT_FAILED


# ----------------------------------------------------------------------------- destination


def add_destination_arguments(p: argparse.ArgumentParser) -> None:
    """--hub-model-id, --hub-public, --run-name(-prefix), --trackio-project, --trackio-space-id."""
    p.add_argument(
        "--hub-model-id",
        default=None,
        help="push the adapter to this Hub repo (needs HF_TOKEN); checkpoints every 10%% of steps",
    )
    p.add_argument(
        "--promote",
        choices=PROMOTE_POLICIES,
        default="manual",
        help="a passing run moves the live tag to itself (on_pass), leaves it to an evaluation job that "
        "compares it with the live one (on_eval: evaluate_adapter.py) or where it is (manual, the default); "
        "the first passing run of a repo with no live tag is made live either way",
    )
    p.add_argument(
        "--live-tag", default=LIVE_TAG, help=f"the tag serving loads (default {LIVE_TAG})"
    )
    p.add_argument(
        "--resume-from",
        metavar="RUN",
        default=None,
        help=f"continue from the {CHECKPOINT_DIR}/ a run (killed by its timeout, say) pushed to its branch "
        "runs/RUN of --hub-model-id: weights, optimizer, scheduler and step count",
    )
    p.add_argument(
        "--hub-public",
        action="store_true",
        help="create the Hub repo (and Trackio Space) public; tenant adapters default to private",
    )
    p.add_argument(
        "--run-name", default=None, help="run name (default <prefix>-<$JOB_ID>, or <prefix>-<UTC time>)"
    )
    p.add_argument(
        "--run-name-prefix", default=None, help="prefix of the default run name (default: the dataset's name)"
    )
    p.add_argument(
        "--trackio-project", default=DEFAULT_TRACKIO_PROJECT, help="Trackio project name"
    )
    p.add_argument(
        "--trackio-space-id",
        default=None,
        help="Trackio Space (org/name) that keeps the metrics after the job ends (needs HF_TOKEN)",
    )


def default_run_name(dataset: str, prefix: str | None = None) -> str:
    """`<prefix or dataset stem>-<job id>` inside a job (so the console can find a scheduled run's
    Trackio run from its job id), else `<...>-<UTC time>`."""
    if prefix:
        stem = prefix
    else:
        stem = Path(dataset).stem if dataset.endswith((".jsonl", ".json")) else dataset.split("/")[-1]
    stem = re.sub(r"[^\w.-]+", "-", stem).strip("-.") or "run"
    job_id = re.sub(r"[^\w.-]+", "-", os.environ.get("JOB_ID", "")).strip("-.")
    return f"{stem}-{job_id or time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"


def check_run_name(run_name: str) -> None:
    if not RUN_NAME_RE.match(run_name):
        raise Refusal(
            "bad_arguments",
            f"--run-name {run_name!r}: use letters, digits, '.', '_' or '-' (max 96 chars)",
        )


@dataclass(frozen=True)
class Destination:
    """Where a run's weights go: the Hub repo it pushes to, and the folder it writes."""

    output_dir: Path
    artifacts_dir: Path | None  # $CONSOLE_ARTIFACTS_DIR, when set
    hub_model_id: str | None
    run_name: str = ""

    @property
    def hub_branch(self) -> str | None:
        """The run's own branch of the Hub repo: its checkpoints, its final weights, its manifest."""
        return f"{RUN_BRANCH_PREFIX}{self.run_name}" if self.hub_model_id else None

    @property
    def where(self) -> str:
        """`hf://<repo>` or the folder: the `destination=`, `saved adapter=` and `adapter=` value."""
        if self.hub_model_id:
            return f"hf://{self.hub_model_id}"
        return str(self.output_dir)


def resolve_destination(args: argparse.Namespace, run_name: str) -> Destination:
    """The HF Jobs rules on where weights go, checked before anything heavy (raises Refusal)."""
    token = os.environ.get("HF_TOKEN", "").strip()
    hub_model_id = args.hub_model_id
    if hub_model_id is not None:
        if not REPO_ID_RE.match(hub_model_id):
            raise Refusal("bad_arguments", f"--hub-model-id {hub_model_id!r} is not a repo id")
        if not token:
            raise Refusal(
                "hf_token_missing",
                f"--hub-model-id {hub_model_id} asks to push to the Hub but HF_TOKEN is not set; "
                "on HF Jobs pass --secrets HF_TOKEN (a write token), locally export HF_TOKEN. "
                "Refusing to train weights that could not be saved.",
            )
    if args.trackio_space_id and not token:
        raise Refusal(
            "hf_token_missing",
            f"--trackio-space-id {args.trackio_space_id} needs HF_TOKEN to sync metrics "
            "(on HF Jobs pass --secrets HF_TOKEN)",
        )

    artifacts_env = os.environ.get(ARTIFACTS_ENV, "").strip()
    artifacts_dir = Path(artifacts_env).expanduser().resolve() if artifacts_env else None
    if hub_model_id is None and artifacts_dir is None:
        raise Refusal(
            "no_destination",
            f"neither --hub-model-id nor {ARTIFACTS_ENV} is set, so the trained adapter would "
            "be lost when the job's folder is thrown away; pass --hub-model-id org/name "
            f"(with HF_TOKEN) or set {ARTIFACTS_ENV}",
        )
    if artifacts_dir is not None:
        output_dir = artifacts_dir / run_name
    else:
        output_dir = Path("outputs").resolve() / run_name
    if output_dir.exists() and any(output_dir.iterdir()):
        raise Refusal(
            "run_exists",
            f"{output_dir} already holds files; pick another --run-name",
        )
    return Destination(output_dir=output_dir, artifacts_dir=artifacts_dir, hub_model_id=hub_model_id, run_name=run_name)


def open_run_branch(dest: Destination, *, private: bool) -> None:
    """Create the Hub repo (if new) and the run's branch from `main`'s head, before the trainer
    pushes its first checkpoint there (nothing to do without a Hub repo). A token without write
    access fails here, before training."""
    if dest.hub_model_id is None or not is_main_process():
        return
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(dest.hub_model_id, private=private, exist_ok=True)
    api.create_branch(dest.hub_model_id, branch=dest.hub_branch, exist_ok=True)


def land_on_main(dest: Destination, commit_message: str) -> str:
    """A passing run's final weights (the output folder, as the trainer pushed it to the run's
    branch) committed to `main`, where serving reads. Returns the commit id."""
    from huggingface_hub import HfApi

    info = HfApi().upload_folder(
        repo_id=dest.hub_model_id,
        folder_path=str(dest.output_dir),
        revision="main",
        commit_message=commit_message,
        ignore_patterns=["_*", "checkpoint-*", "*.tmp"],
    )
    return info.oid


def fetch_checkpoint(dest: Destination, run: str | None) -> tuple[str, int] | None:
    """`--resume-from RUN`: the last checkpoint RUN pushed to its branch, downloaded beside this
    run's output folder; returns (its folder, its step), None without --resume-from. Raises
    Refusal (`no_checkpoint`) when there is none to resume from."""
    if not run:
        return None
    if dest.hub_model_id is None:
        raise Refusal("bad_arguments", "--resume-from needs --hub-model-id (the repo whose runs/RUN branch holds it)")
    check_run_name(run)
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    branch = f"{RUN_BRANCH_PREFIX}{run}"
    target = dest.output_dir.parent / f".resume-{run}"
    try:
        folder = snapshot_download(dest.hub_model_id, revision=branch,
                                   allow_patterns=[f"{CHECKPOINT_DIR}/*", "manifest.json"], local_dir=str(target))
    except (RepositoryNotFoundError, RevisionNotFoundError):
        raise Refusal("no_checkpoint", f"{dest.hub_model_id} has no branch {branch} to resume from") from None
    from jobkit.hub_runs import check_resumable, read_manifest

    check_resumable(read_manifest(Path(folder) / "manifest.json"), run)  # a NaN run is not resumed
    path = Path(folder) / CHECKPOINT_DIR
    state = path / "trainer_state.json"
    if not state.is_file():
        raise Refusal("no_checkpoint", f"{branch} of {dest.hub_model_id} holds no {CHECKPOINT_DIR}/ (no save reached)")
    step = int(json.loads(state.read_text(encoding="utf-8")).get("global_step") or 0)
    say(f"resuming from {run} step={step} ({dest.hub_model_id}@{branch}/{CHECKPOINT_DIR})")
    return str(path), step


def move_live_tag(dest: Destination, commit: str, *, tag: str, policy: str) -> str | None:
    """After a passing run landed `commit` on main: the live tag moved there when the policy is
    on_pass, or when the repo has no live tag yet (something must be live). Returns where the tag
    now points when it moved, else None (it stays on the version an engineer promoted)."""
    from huggingface_hub import HfApi

    api = HfApi()
    tags = {t.name for t in api.list_repo_refs(dest.hub_model_id).tags}
    if tag in tags and policy != "on_pass":
        return None
    if tag in tags:
        api.delete_tag(dest.hub_model_id, tag=tag)
    api.create_tag(dest.hub_model_id, tag=tag, revision=commit, tag_message=f"{dest.run_name}: PASS")
    return commit


def record_failed_run(dest: Destination) -> None:
    """The failed run's manifest on its own branch, beside the checkpoints it pushed: the branch
    says it failed and why. Best effort: the verdict stands whatever happens here."""
    from huggingface_hub import HfApi

    try:
        HfApi().upload_file(
            repo_id=dest.hub_model_id,
            path_or_fileobj=str(dest.output_dir / "manifest.json"),
            path_in_repo="manifest.json",
            revision=dest.hub_branch,
            commit_message=f"{dest.run_name}: FAIL (manifest)",
        )
    except Exception as e:  # noqa: BLE001 - the run already failed; say why the record is missing
        say(f"could not record the failed run on {dest.hub_branch}: {type(e).__name__}: {e}")


def trainer_rules(
    dest: Destination, args: argparse.Namespace, run_name: str, config_fields: set[str]
) -> dict[str, Any]:
    """The trainer-config keyword arguments every recipe shares: Trackio, the Hub push, the log.

    `config_fields` are the field names of the installed trainer config (they vary across
    transformers versions); empty means "take them all".
    """
    kwargs: dict[str, Any] = dict(
        output_dir=str(dest.output_dir),
        logging_first_step=True,
        logging_nan_inf_filter=False,  # a NaN must reach the monitor, not be averaged away
        disable_tqdm=True,
        report_to=["trackio"],
        project=args.trackio_project,
        run_name=run_name,
        trackio_space_id=args.trackio_space_id,
        trackio_static_space_id=False,  # no surprise Spaces: only the one asked for
        hub_private_repo=not args.hub_public,
    )
    if dest.hub_model_id is not None:
        # HF Jobs rules: the container is ephemeral, so every checkpoint goes to the Hub, and a
        # checkpoint is written every 10% of the run (a timeout keeps what was pushed).
        # Each run pushes to its own branch (opened by `hub_runs.open_run` before the trainer is
        # built): only a passing run lands on main (`finish`). Each save is pushed by
        # `hub_runs.CheckpointPusher` as one commit (the weights, the full checkpoint in
        # last-checkpoint/, the manifest), so a run killed by its timeout can be resumed
        # (`--resume-from`) from the newest one; the trainer itself pushes only at the end.
        kwargs.update(
            push_to_hub=True,
            hub_model_id=dest.hub_model_id,
            hub_revision=dest.hub_branch,
            hub_strategy="end",
            save_strategy="steps",
            save_steps=0.1,
            save_total_limit=2,
        )
    else:
        kwargs.update(save_strategy="no", push_to_hub=False)
    for key in ("trackio_static_space_id", "project", "trackio_space_id"):
        if config_fields and key not in config_fields:
            kwargs.pop(key, None)
    return kwargs


def write_manifest(dest: Destination, info: dict[str, Any]) -> Path:
    """`manifest.json` beside the adapter (written atomically)."""
    dest.output_dir.mkdir(parents=True, exist_ok=True)
    path = dest.output_dir / "manifest.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def finish(
    trainer: Any,
    dest: Destination,
    run_name: str,
    steps: int,
    monitor: LossMonitor,
    info: dict[str, Any],
    *,
    artifact: str = "adapter",
    live_policy: tuple[str, str] = (LIVE_TAG, "manual"),
) -> tuple[bool, str]:
    """The end of a run: the monitor's verdict, the manifest, then the weights to their destination.

    `artifact` names what the run trained: "adapter" (LoRA) or "model" (a full fine-tune, a
    sentence-transformers model); it is the key of the `saved` line and of the VERDICT line. A
    failed run leaves no weights, only its manifest (in the artifact folder). Returns (passed, the
    rest of the VERDICT line) for :func:`run_job`. On the Hub a passing run lands on main and
    `live_policy` (tag, manual | on_pass) says whether the live tag follows it (:func:`move_live_tag`).
    """
    for alert in monitor.conclude():  # already sent by monitor_callback when training ended
        send_alert(alert)
    passed, reason = monitor.verdict()
    summary = (
        f"run={run_name} steps={steps} first_loss={fmt_loss(monitor.first_loss)} "
        f"last_loss={fmt_loss(monitor.last_loss)}"
    )
    if monitor.metric_name is not None:
        summary += (
            f" metric={monitor.metric_name} metric_first={fmt_loss(monitor.first_metric)} "
            f"metric_last={fmt_loss(monitor.last_metric)}"
        )
    info = {**info, artifact: dest.where, "verdict": "PASS" if passed else "FAIL", "failure": reason or None,
            "promote": live_policy[1]}
    if not is_main_process():  # a rank of a sharded run takes part in gathering the weights, no more
        return rank_finish(trainer, dest, f"{run_name}: final {artifact}", passed), summary
    if not passed:
        from jobkit.hub_runs import NOT_RESUMABLE

        info["not_resumable"] = NOT_RESUMABLE.get((reason or "").split(":", 1)[0].strip())
        if dest.artifacts_dir is not None or dest.hub_model_id is not None:
            write_manifest(dest, info)  # a record of the failed run, without weights
        if dest.hub_model_id is not None:
            record_failed_run(dest)
        return False, f"{reason} {summary}"
    write_manifest(dest, info)
    if dest.hub_model_id is not None:
        say(f"pushing {artifact} to {dest.where} (branch {dest.hub_branch}, then main)")
        try:
            trainer.push_to_hub(commit_message=f"{run_name}: final {artifact}", revision=dest.hub_branch)
            commit = land_on_main(dest, f"{run_name}: PASS {summary}")
            say(f"landed {artifact} on main commit={commit}")
            tag, policy = live_policy
            if move_live_tag(dest, commit, tag=tag, policy=policy):
                say(f"live tag {tag} -> {commit}")
            elif policy == "on_eval":
                say(f"live tag {tag} left where it is until the evaluation (promote=on_eval)")
            else:
                say(f"live tag {tag} left where it is (promote={policy})")
        except Exception as e:
            first = str(e).splitlines()[0] if str(e) else ""
            return False, f"push_failed: {type(e).__name__}: {first} {summary}"
    else:
        trainer.save_model(str(dest.output_dir))
    say(f"saved {artifact}={dest.where}")
    return True, f"{summary} {artifact}={dest.where}"


# ----------------------------------------------------------------------------- loss monitor


def add_monitor_arguments(p: argparse.ArgumentParser) -> None:
    """The alert thresholds, and the NaN injection used to test the alert path."""
    p.add_argument(
        "--divergence-factor",
        type=float,
        default=2.0,
        help="alert when the loss stays above this multiple of its running best (default 2.0)",
    )
    p.add_argument(
        "--divergence-patience",
        type=int,
        default=3,
        help="consecutive logged steps above the divergence threshold before alerting",
    )
    p.add_argument(
        "--stop-on-divergence",
        action="store_true",
        help="stop training when divergence is detected (NaN/inf always stops)",
    )
    p.add_argument(
        "--stall-patience",
        type=int,
        default=20,
        help="alert when the mean loss of this many logged steps is no lower than that of the "
        "as many before them (default 20)",
    )
    p.add_argument(
        "--stall-min-delta",
        type=float,
        default=0.001,
        help="relative fall of that mean that counts as falling (default 0.001 = 0.1%%)",
    )
    p.add_argument(
        "--min-loss-drop",
        type=float,
        default=DEFAULT_MIN_LOSS_DROP,
        help="fail the run (flat_loss) unless the best loss of its last fifth is this much below "
        "the mean of its first fifth, relative (default 0.01 = 1%%; 0 turns the check off)",
    )
    p.add_argument(
        "--inject-nan-at-step",
        type=int,
        default=None,
        help=f"testing: poison the LoRA weights at this step (also env {INJECT_NAN_ENV})",
    )


def check_monitor_arguments(args: argparse.Namespace) -> None:
    if args.stall_patience <= 0 or args.divergence_patience <= 0:
        raise Refusal("bad_arguments", "alert patiences must be positive")
    if args.divergence_factor <= 1.0:
        raise Refusal("bad_arguments", "--divergence-factor must be above 1")
    if not 0.0 <= args.min_loss_drop < 1.0:
        raise Refusal("bad_arguments", "--min-loss-drop must be at least 0 and below 1")


def inject_nan_step(args: argparse.Namespace) -> int | None:
    """--inject-nan-at-step, or $CONSOLE_INJECT_NAN_AT_STEP (raises Refusal if not a number)."""
    inject = args.inject_nan_at_step
    if inject is None and os.environ.get(INJECT_NAN_ENV, "").strip():
        try:
            inject = int(os.environ[INJECT_NAN_ENV])
        except ValueError:
            raise Refusal("bad_arguments", f"{INJECT_NAN_ENV} must be an integer") from None
    return inject


@dataclass
class Alert:
    """One alert raised by the loss monitor."""

    kind: str  # nan | divergence | stall
    level: str  # INFO | WARN | ERROR (trackio.AlertLevel names)
    title: str
    text: str
    step: int

    def line(self) -> str:
        return (
            f'ALERT level={self.level} kind={self.kind} step={self.step} title="{self.title}": '
            f"{self.text}"
        )


@dataclass
class LossMonitor:
    """Watches the logged loss (and grad-norm) series; pure Python so it can be tested without torch.

    While training:

    * NaN/inf loss: one ERROR alert, and `should_stop` becomes true.
    * Divergence: the loss stays above `divergence_factor` x its running best, having given back
      at least DIVERGED_GIVEBACK of its fall from the first loss, for `divergence_patience`
      consecutive observations (WARN, re-armed once it comes back down).
    * Stall: the loss did not fall over the last `stall_patience` observations: their mean is
      not `stall_min_delta` (relative) below the mean of the `stall_patience` before them (WARN,
      re-armed once the loss falls again). Means of windows, not a best to beat: a noisy loss
      that still falls is not stalled, and a loss at a new low never reads as stalled.

    At the end, :meth:`verdict` judges the run and :meth:`conclude` gives a failed run its ERROR
    alert (see :meth:`verdict` for the rules).
    """

    divergence_factor: float = 2.0
    divergence_patience: int = 3
    stall_patience: int = 20
    stall_min_delta: float = 0.001
    stop_on_divergence: bool = False
    min_loss_drop: float = DEFAULT_MIN_LOSS_DROP
    vocab_size: int | None = None  # when known, a dead run's loss is compared to ln(vocab)
    metric_name: str | None = None  # a held-out metric that must rise (see watch_metric)
    min_metric_gain: float = 0.0
    metric_key: str | None = None  # the log key of the metric (None: eval_<metric_name>)
    metrics: list[tuple[int, float]] = field(default_factory=list)
    losses: list[tuple[int, float]] = field(default_factory=list)
    grad_norms: list[tuple[int, float]] = field(default_factory=list)
    learning_rates: list[tuple[int, float]] = field(default_factory=list)
    short_steps: set[int] = field(default_factory=set)  # logged steps of a short batch (see observe)
    alerts: list[Alert] = field(default_factory=list)
    best: float | None = None
    best_step: int = 0
    above: int = 0
    diverging: bool = False
    stalled: bool = False
    nan_step: int | None = None
    should_stop: bool = False
    concluded: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> LossMonitor:
        """A monitor with the thresholds of :func:`add_monitor_arguments`."""
        return cls(
            divergence_factor=args.divergence_factor,
            divergence_patience=args.divergence_patience,
            stall_patience=args.stall_patience,
            stall_min_delta=args.stall_min_delta,
            stop_on_divergence=args.stop_on_divergence,
            min_loss_drop=args.min_loss_drop,
        )

    def watch_metric(self, name: str, min_gain: float = 0.0) -> None:
        """Judge the run by a held-out metric too: its last evaluation must beat its first (the one
        before training) by more than `min_gain` (absolute), or the run fails `metric_flat`."""
        self.metric_name = name
        self.min_metric_gain = min_gain

    def observe_metric(self, step: int, value: float) -> None:
        self.metrics.append((step, float(value)))

    @property
    def first_metric(self) -> float | None:
        return self.metrics[0][1] if self.metrics else None

    @property
    def last_metric(self) -> float | None:
        return self.metrics[-1][1] if self.metrics else None

    def observe(
        self,
        step: int,
        loss: float,
        grad_norm: float | None = None,
        *,
        learning_rate: float | None = None,
        short: bool = False,
    ) -> list[Alert]:
        """One logged step: its loss and, when the trainer logs them, its gradient norm and
        learning rate. `short`: the step is an epoch's short last batch (fewer rows than the
        others), whose loss is not comparable (a contrastive loss over fewer in-batch negatives is
        lower); the verdict leaves it out."""
        new: list[Alert] = []
        if grad_norm is not None:
            self.grad_norms.append((step, float(grad_norm)))
        if learning_rate is not None:
            self.learning_rates.append((step, float(learning_rate)))
        if short:
            self.short_steps.add(step)
        if not math.isfinite(loss):
            if self.nan_step is None:
                self.nan_step = step
                new.append(
                    Alert(
                        "nan",
                        "ERROR",
                        "NaN/inf loss",
                        f"loss is {fmt_loss(loss)} at step {step}; training stopped",
                        step,
                    )
                )
            self.should_stop = True
            self.alerts.extend(new)
            return new
        self.losses.append((step, loss))
        if self.best is None or loss < self.best:
            self.best, self.best_step = loss, step
        threshold = self.best * self.divergence_factor
        gained = self.losses[0][1] - self.best
        if self.best > 0 and loss > threshold and loss - self.best >= DIVERGED_GIVEBACK * gained:
            self.above += 1
            if self.above >= self.divergence_patience and not self.diverging:
                self.diverging = True
                new.append(
                    Alert(
                        "divergence",
                        "WARN",
                        "Loss diverging",
                        f"loss {fmt_loss(loss)} at step {step} is {loss / self.best:.1f}x the "
                        f"best {fmt_loss(self.best)} (step {self.best_step})",
                        step,
                    )
                )
                if self.stop_on_divergence:
                    self.should_stop = True
        else:
            self.above = 0
            self.diverging = False
        stall = self._stall(step)
        if stall is not None and not self.stalled:
            new.append(stall)
        self.stalled = stall is not None
        self.alerts.extend(new)
        return new

    def resume(self, history: list[dict[str, Any]]) -> int:
        """Take in the logged steps of the run this one resumes (a checkpoint's
        ``trainer_state.json`` ``log_history``, which the trainer restores), so the verdict judges
        the run as a whole: a run resumed at step 32 of 40 is judged from its first loss, not by
        8 steps alone. Their alerts were sent by the run that logged them and are not sent again.
        Returns how many logged steps were taken in."""
        taken = 0
        for entry in history:
            if "loss" not in entry or "step" not in entry:
                continue
            try:
                loss = float(entry["loss"])
                grad = float(entry["grad_norm"]) if entry.get("grad_norm") is not None else None
                lr = float(entry["learning_rate"]) if entry.get("learning_rate") is not None else None
            except (TypeError, ValueError):
                continue
            kept = len(self.alerts)
            self.observe(int(entry["step"]), loss, grad, learning_rate=lr)
            del self.alerts[kept:]
            taken += 1
        self.should_stop = False  # the resumed run decides for itself whether to stop
        return taken

    def _stall(self, step: int) -> Alert | None:
        """The stall alert when the last `stall_patience` losses' mean is not `stall_min_delta`
        below the mean of the `stall_patience` before them (None: falling, or too few yet)."""
        n = self.stall_patience
        if len(self.losses) < 2 * n:
            return None
        before, last = self.losses[-2 * n:-n], self.losses[-n:]
        mean_before = sum(v for _, v in before) / n
        mean_last = sum(v for _, v in last) / n
        if mean_last < mean_before * (1.0 - self.stall_min_delta):
            return None
        means = (f"mean {fmt_loss(mean_last)} over steps {last[0][0]}-{last[-1][0]}, "
                 f"{fmt_loss(mean_before)} over steps {before[0][0]}-{before[-1][0]}")
        if mean_last >= mean_before or mean_before <= 0:
            text = f"the loss did not fall in {n} logged steps ({means})"
        else:
            fell = 1.0 - mean_last / mean_before
            text = (f"the loss fell only {fell:.2%} in {n} logged steps, under {self.stall_min_delta:.1%} "
                    f"({means})")
        return Alert("stall", "WARN", "Loss stalled", text, step)

    @property
    def first_loss(self) -> float | None:
        return self.losses[0][1] if self.losses else None

    @property
    def last_loss(self) -> float | None:
        return self.losses[-1][1] if self.losses else None

    def _chance(self, loss: float) -> str:
        """`, chance level for <V> tokens` when the loss is within 1% of ln(vocab)."""
        if self.vocab_size and self.vocab_size > 1:
            chance = math.log(self.vocab_size)
            if abs(loss - chance) <= 0.01 * chance:
                return f", chance level for {self.vocab_size} tokens"
        return ""

    def verdict(self) -> tuple[bool, str]:
        """(passed, failure reason) for the run as a whole; the first rule that matches decides.

        The window is the last fifth of the logged steps (at least one), and the run is judged by
        the best loss in it, so a noisy last step or two does not fail a run that learned. Only
        the losses of full batches are judged (an epoch's short last batch is left out while any
        full one was logged): the loss of fewer rows is not the same measure, and 21 rows in
        batches of 8 at learning rate 0 "fell" 25% on every third step.

        * `nan_loss`: a loss was NaN/inf.
        * `no_loss`: no loss was logged.
        * `zero_lr`: the learning rate was 0 on every logged step: the weights never changed,
          whatever the loss did.
        * `zero_grad`: the gradient norm was 0 (at most ZERO_GRAD_NORM) on every one of the last
          logged steps, at least two and at least a window (a loss of exactly 0 excepted):
          nothing trains any more.
        * `diverged`: the best loss of the window is above `divergence_factor` x the run's best,
          and gave back at least DIVERGED_GIVEBACK of the fall from the first window's mean to it.
        * `no_metric` / `metric_flat` (a watched held-out metric only): it was never evaluated, or
          its last value is not more than `min_metric_gain` above its first.
        * `flat_loss`: with at least FLAT_MIN_POINTS logged steps, the best loss of the window is
          not `min_loss_drop` (relative) below the mean of the first window.
        """
        if self.nan_step is not None:
            return False, f"nan_loss: loss became NaN/inf at step {self.nan_step}"
        if not self.losses:
            return False, "no_loss: no training loss was logged"
        assert self.best is not None
        if self.learning_rates and all(lr == 0 for _, lr in self.learning_rates):
            return False, (
                f"zero_lr: the learning rate was 0 on every logged step ({len(self.learning_rates)} "
                f"steps, to step {self.learning_rates[-1][0]}): the weights never changed; "
                "give --learning-rate a value above 0"
            )
        full = [v for s, v in self.losses if s not in self.short_steps]
        values = full or [v for _, v in self.losses]
        k = max(1, len(values) // 5)
        start = sum(values[:k]) / k
        end = min(values[-k:])

        zeros = 0
        for _, g in reversed(self.grad_norms):
            if not (abs(g) <= ZERO_GRAD_NORM):
                break
            zeros += 1
        needed = min(len(self.grad_norms), max(2, k))
        if self.grad_norms and zeros >= needed and end > 0:
            first = self.grad_norms[-zeros][0]
            last = self.grad_norms[-1][0]
            return False, (
                f"zero_grad: the gradient norm is 0 on every logged step from step {first} to "
                f"{last} ({zeros} steps): the weights no longer change; loss "
                f"{fmt_loss(self.last_loss)}{self._chance(end)}"
            )
        gave_back = end - self.best >= DIVERGED_GIVEBACK * (start - self.best)
        if self.best > 0 and end > self.best * self.divergence_factor and gave_back:
            return False, (
                f"diverged: the best of the last {k} logged steps {fmt_loss(end)} is "
                f"{end / self.best:.2f}x the run's best {fmt_loss(self.best)} (step {self.best_step}) "
                f"(--divergence-factor {self.divergence_factor:g})"
            )
        if self.metric_name is not None and (why := self.judge_metric()):
            return False, why
        if self.min_loss_drop > 0 and len(values) >= FLAT_MIN_POINTS and start > 0:
            drop = (start - end) / start
            if drop < self.min_loss_drop:
                change = f"fell {drop:.1%}" if drop >= 0 else f"rose {-drop:.1%}"
                return False, (
                    f"flat_loss: the loss {change} (mean of the first {k} logged steps "
                    f"{fmt_loss(start)}, best of the last {k} {fmt_loss(end)}{self._chance(end)}); "
                    f"a run that learns falls at least {self.min_loss_drop:.0%}"
                )
        return True, ""

    def judge_metric(self) -> str | None:
        """The watched metric's failure reason, or None (`jobkit.rewards` judges a reward and an
        accuracy against chance instead): `no_metric` / `metric_flat`."""
        if len(self.metrics) < 2:
            return (
                f"no_metric: the held-out {self.metric_name} was evaluated {len(self.metrics)} "
                "time(s); it needs a value before training and one after"
            )
        first, last = self.metrics[0][1], self.metrics[-1][1]
        if not (last - first > self.min_metric_gain):
            return (
                f"metric_flat: the held-out {self.metric_name} went from {fmt_loss(first)} before "
                f"training to {fmt_loss(last)} (step {self.metrics[-1][0]}); a run that learns "
                f"raises it by more than {self.min_metric_gain:g}"
            )
        return None

    def conclude(self) -> list[Alert]:
        """The ERROR alert of a failed verdict (kind = its reason code), once; a NaN already had
        its own. Returns the new alerts (none on the second call)."""
        if self.concluded:
            return []
        self.concluded = True
        passed, reason = self.verdict()
        if passed or self.nan_step is not None:
            return []
        kind, _, text = reason.partition(": ")
        step = self.losses[-1][0] if self.losses else 0
        alert = Alert(kind, "ERROR", VERDICT_TITLES.get(kind, "Run failed"), text, step)
        self.alerts.append(alert)
        return [alert]

    def record(self) -> dict[str, Any]:
        """The monitor's part of a run's manifest (non-finite losses as null)."""
        out: dict[str, Any] = {
            "first_loss": self.first_loss,
            "last_loss": self.last_loss,
            "best_loss": self.best,
            "final_loss": self.last_loss,
            "alerts": [a.__dict__ for a in self.alerts],
            "short_batch_steps": sorted(self.short_steps),
        }
        if self.metric_name is not None:
            out["metric"] = self.metric_name
            out["metric_first"] = self.first_metric
            out["metric_last"] = self.last_metric
            out["metrics"] = [[step, value] for step, value in self.metrics]
        for k in ("first_loss", "last_loss", "best_loss", "final_loss"):
            if out[k] is not None and not math.isfinite(out[k]):
                out[k] = None
        return out


def progress_line(step: int, steps_total: int | None, loss: float, logs: dict[str, Any], elapsed: float) -> str:
    """`progress step=<i>/<n> loss=<x> lr=<x> grad_norm=<x> epoch=<x> elapsed=<s>s`."""
    parts = [f"progress step={step}/{steps_total}", f"loss={fmt_loss(loss)}"]
    if "learning_rate" in logs:
        parts.append(f"lr={float(logs['learning_rate']):.3e}")
    if "grad_norm" in logs:
        parts.append(f"grad_norm={float(logs['grad_norm']):.4g}")
    for key in ("reward", "kl", "accuracy"):  # GRPO's reward and KL, a reward model's accuracy
        if logs.get(key) is not None:
            parts.append(f"{key}={float(logs[key]):.4g}")
    if "epoch" in logs:
        parts.append(f"epoch={float(logs['epoch']):.2f}")
    parts.append(f"elapsed={elapsed:.1f}s")
    return " ".join(parts)


def send_alert(alert: Alert) -> None:
    """The alert to the log, then to Trackio (stored with the run; the log has it if that fails)."""
    import trackio

    say(alert.line())
    levels = {"INFO": trackio.AlertLevel.INFO, "WARN": trackio.AlertLevel.WARN}
    levels["ERROR"] = trackio.AlertLevel.ERROR
    try:
        trackio.alert(
            title=alert.title,
            text=f"[{alert.kind} step={alert.step}] {alert.text}",
            level=levels[alert.level],
        )
    except Exception as e:
        say(f"warning: trackio.alert failed: {e}")


def short_epoch_steps(targs: Any, dataloader: Any) -> int | None:
    """The optimizer steps of one epoch when its last one trains fewer rows than the others (the
    rows do not divide into whole batches and accumulation steps), else None (or not known)."""
    try:
        batches = len(dataloader)
        rows = len(dataloader.dataset)
    except (TypeError, AttributeError):
        return None
    accumulate = max(1, int(getattr(targs, "gradient_accumulation_steps", 1) or 1))
    batch = int(getattr(targs, "per_device_train_batch_size", 0) or 0) * max(1, int(getattr(targs, "world_size", 1)))
    if batches <= 0 or batch <= 0:
        return None
    steps = -(-batches // accumulate)
    return steps if rows < steps * accumulate * batch else None


def monitor_callback(monitor: LossMonitor, *, steps_total: int | None, inject_nan_at: int | None = None) -> Any:
    """A transformers `TrainerCallback`: `progress` lines, the loss monitor's alerts (log and
    Trackio), and training stopped when the monitor says so.

    Its `steps_total` follows the trainer's own count (a `steps_total=` line when that differs
    from the estimate) and `started` is when training began. When training is over (the trainer's
    summary log, before the Trackio run is finished) a failed verdict's ERROR alert is sent. With
    `inject_nan_at` it poisons the LoRA weights (every trained weight when there is no adapter)
    before that step, to exercise the NaN path for real. Evaluations of a watched metric print
    `eval step=<i> <metric>=<x>` and feed :meth:`LossMonitor.observe_metric`.
    """
    import torch
    from transformers import TrainerCallback

    try:
        step_delay = max(0.0, float(os.environ.get(STEP_DELAY_ENV, "") or 0))
    except ValueError:
        step_delay = 0.0
    hold_file = os.environ.get(STEP_HOLD_ENV) or None  # a GPU stalled mid-run: its timeout kills it

    class MonitorCallback(TrainerCallback):
        def __init__(self) -> None:
            self.steps_total = steps_total
            self.started = time.monotonic()
            self.epoch_steps: int | None = None  # optimizer steps per epoch, when its last is short
            self.last_logged = 0
            self.saved = False  # a checkpoint of this run is saved (the step hold applies after it)

        def on_train_begin(self, targs, state, control, train_dataloader=None, **kwargs):  # type: ignore[no-untyped-def]
            self.started = time.monotonic()
            self.epoch_steps = short_epoch_steps(targs, train_dataloader)
            if state.global_step and not monitor.losses:
                # resumed from a checkpoint: its earlier steps are part of this run's verdict
                taken = monitor.resume(list(state.log_history or []))
                self.last_logged = state.global_step
                if taken:
                    say(f"resumed history: {taken} logged steps to step {state.global_step} "
                        f"(first loss {fmt_loss(monitor.first_loss)})")
            if state.max_steps and state.max_steps != self.steps_total:
                self.steps_total = state.max_steps
                say(f"steps_total={self.steps_total}")

        def on_step_begin(self, targs, state, control, model=None, **kwargs):  # type: ignore[no-untyped-def]
            if inject_nan_at is not None and state.global_step + 1 == inject_nan_at:
                trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
                lora = [(n, p) for n, p in trained if "lora_" in n]
                say(f"inject-nan: poisoning the {'LoRA' if lora else 'trained'} weights before step {inject_nan_at}")
                with torch.no_grad():
                    for _, p in lora or trained:
                        p.fill_(float("nan"))

        def on_step_end(self, targs, state, control, **kwargs):  # type: ignore[no-untyped-def]
            if step_delay > 0:
                time.sleep(step_delay)
            while hold_file and self.saved and os.path.exists(hold_file):
                time.sleep(0.2)

        def on_save(self, targs, state, control, **kwargs):  # type: ignore[no-untyped-def]
            self.saved = True

        def on_log(self, targs, state, control, logs=None, **kwargs):  # type: ignore[no-untyped-def]
            if not logs:
                return
            key = monitor.metric_key or (f"eval_{monitor.metric_name}" if monitor.metric_name else None)
            if key is not None and key in logs:
                value = float(logs[key])
                if key.startswith("eval_"):  # a training-log metric (GRPO's reward) is on the progress line
                    say(f"eval step={state.global_step} {monitor.metric_name}={fmt_loss(value)}")
                monitor.observe_metric(state.global_step, value)
            if "loss" not in logs:
                if "train_runtime" in logs:
                    # the trainer's summary, logged once training is over and before the Trackio
                    # run is finished: the time for the verdict's alert
                    for alert in monitor.conclude():
                        send_alert(alert)
                return
            loss = float(logs["loss"])
            say(progress_line(state.global_step, self.steps_total, loss, logs, time.monotonic() - self.started))
            try:
                grad = float(logs["grad_norm"]) if logs.get("grad_norm") is not None else None
            except (TypeError, ValueError):
                grad = None
            try:
                lr = float(logs["learning_rate"]) if logs.get("learning_rate") is not None else None
            except (TypeError, ValueError):
                lr = None
            step = state.global_step
            # a logged loss of one step only: one averaged over several dilutes a short batch
            short = (self.epoch_steps is not None and step - self.last_logged == 1
                     and step % self.epoch_steps == 0)  # fmt: skip
            self.last_logged = step
            for alert in monitor.observe(step, loss, grad, learning_rate=lr, short=short):
                send_alert(alert)
            if monitor.should_stop:
                control.should_training_stop = True

    return MonitorCallback()


# ----------------------------------------------------------------------------- the libraries


def pick_precision(choice: str, *, full: bool = False) -> tuple[bool, bool, Any]:
    """(bf16, fp16, torch dtype for loading) for auto | bf16 | fp16 | fp32.

    auto: bf16 on GPUs that support it, fp16 on other GPUs (T4), fp32 on CPU. With fp16 a LoRA
    run loads its frozen base in fp16 (PEFT keeps the adapters in fp32, which AMP needs), and a
    full fine-tune (`full`) in fp32 (AMP's master weights). `jobkit.vram.training_dtype` prices
    the same rule.
    """
    import torch

    if choice == "auto":
        if torch.cuda.is_available():
            choice = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
        else:
            choice = "fp32"
    if choice == "bf16":
        return True, False, torch.bfloat16
    if choice == "fp16":
        return False, True, torch.float32 if full else torch.float16
    return False, False, torch.float32


def quiet_libraries() -> None:
    """Deprecation chatter and progress bars are not news for the person reading a job's log."""
    import datasets
    from transformers.utils import logging as hf_logging

    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message=".*pin_memory.*")
    hf_logging.set_verbosity_warning()
    hf_logging.disable_progress_bar()
    datasets.disable_progress_bars()
