"""Ship a job's scripts the way `hf jobs uv run` does: through the jobs-artifacts bucket.

A :class:`~console.jobspec.Submission` names the files it needs from this machine (its recipe
and the `jobkit` package, `Submission.ships`) and a content-named folder for them
(`Submission.bundle_id`). :func:`ship` uploads them once per folder to the
``{namespace}/jobs-artifacts`` bucket (private, created if missing; the upload goes through Xet,
as every bucket upload of huggingface_hub does) and returns the submission with the read-only
bucket volume that mounts that folder at `jobspec.TRAINING_MOUNT`. Equal files make one folder,
so a fleet of a thousand tenants uploads its recipes once, and a job's spec carries a volume of a
few hundred bytes instead of the scripts themselves.

:func:`base_model_problem` asks the Hub (`HfApi.model_info`) whether a Hub run's base model
exists, before anything is sent: a base that does not exist would fail on the paid GPU, after
the image, the install and a minute of retries.

:class:`BaseModelCheck` adds, on both backends, the base's real size: its `config.json` on the Hub
the run loads it from (`console.basesize`), against the size the run declares.

Talks to the backend only through the `HfApi` it is given; no UI.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

from console.basesize import BaseSize, base_size, size_problem
from console.jobspec import ARTIFACTS_BUCKET, TINY_BASE_MODEL, Submission, TrainingRequest
from console.kinds import TRAINING_KINDS
from console.stages import COMPLETED

BASE_MODEL_CHECK_TIMEOUT_S = 10.0
"""How long the model-info request of a base model may take."""

_shipped: set[tuple[str, str, str]] = set()
"""(endpoint, bucket, folder) uploaded by this process: each is uploaded once."""
_lock = threading.Lock()


def base_model_problem(api: Any, base_model: str, *, timeout: float = BASE_MODEL_CHECK_TIMEOUT_S) -> str | None:
    """Why a Hub run cannot train on `base_model`, asked of the Hub (its model info), or None when
    the model exists (a gated one too: its terms are the token's account's to accept)."""
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        api.model_info(base_model, timeout=timeout)
    except GatedRepoError:
        return None
    except RepositoryNotFoundError:
        return (
            f"base_model {base_model!r} does not exist on the Hub (or is private and this token cannot see it): "
            "nothing submitted"
        )
    except HfHubHTTPError as exc:
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        return f"base_model {base_model!r} could not be checked: the Hub answered {status}; nothing submitted"
    except Exception as exc:  # noqa: BLE001 - connection refused, DNS, timeout
        return (
            f"base_model {base_model!r} could not be checked: the Hub did not answer within {timeout:g} s "
            f"({type(exc).__name__}); nothing submitted"
        )
    return None


class BaseModelCheck:
    """Why a request cannot be sent for its base model: on the hub backend whether it exists
    (`base_model_problem`), and on both its real size by its `config.json` against the declared
    one, the LoRA-above-7B rule and the fit (`console.basesize`). Each base model is asked once (a
    fleet of a thousand tenants on one base makes one request)."""

    def __init__(self, api: Any, backend_kind: str = "hub", prices: Any = None) -> None:
        self.api = api
        self.backend_kind = backend_kind
        self.prices = prices
        self._seen: dict[str, str | None] = {}
        self._sizes: dict[str, BaseSize] = {}

    def size(self, base_model: str) -> BaseSize | None:
        """The base's size by its config.json (None for the offline toy or a folder: no Hub repo)."""
        if base_model == TINY_BASE_MODEL or base_model.startswith(("/", "./", "../", "~")):
            return None
        if base_model not in self._sizes:
            self._sizes[base_model] = base_size(self.api, base_model)
        return self._sizes[base_model]

    def __call__(self, req: TrainingRequest) -> str | None:
        """Why `req` cannot be sent for its base model, or None."""
        if req.kind not in TRAINING_KINDS:
            return None
        if req.base_model not in self._seen:
            hub = self.backend_kind == "hub"
            self._seen[req.base_model] = base_model_problem(self.api, req.base_model) if hub else None
        if self._seen[req.base_model]:
            return self._seen[req.base_model]
        size = self.size(req.base_model)
        return size_problem(req, size, self.prices) if size is not None else None


def bucket_of(namespace: str) -> str:
    return f"{namespace}/{ARTIFACTS_BUCKET}"


def ship(api: Any, submission: Submission, namespace: str) -> Submission:
    """The submission ready to run: its files in the namespace's jobs-artifacts bucket and their
    folder mounted read-only at `TRAINING_MOUNT`, on either backend, and the buckets of its own
    volumes (its datasets cache) there, created private if missing. A dataset file of this
    machine that its command names travels the same way (:func:`ship_dataset`). A submission that
    ships nothing comes back as it is."""
    submission = ship_dataset(api, submission, namespace)
    for volume in submission.volumes:
        key = (str(getattr(api, "endpoint", "")), volume["source"], "")
        with _lock:
            if volume["type"] == "bucket" and key not in _shipped:
                api.create_bucket(volume["source"], exist_ok=True, private=True)
                _shipped.add(key)
    if not submission.ships:
        return submission
    bucket = bucket_of(namespace)
    key = (str(getattr(api, "endpoint", "")), bucket, submission.bundle_id)
    with _lock:
        if key not in _shipped:
            from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

            # no progress bars: on a terminal the app draws on, they would scribble over it
            quiet = are_progress_bars_disabled()
            disable_progress_bars()
            try:
                api.create_bucket(bucket, exist_ok=True, private=True)
                api.batch_bucket_files(
                    bucket, add=[(Path(path), f"{submission.bundle_id}/{name}") for name, path in submission.ships]
                )
            finally:
                if not quiet:
                    enable_progress_bars()
            _shipped.add(key)
    return submission.mounted(bucket)


def local_dataset(submission: Submission) -> Path | None:
    """The dataset file of this machine a submission's command names (`--dataset /abs/file`, or a
    dataset check's first argument), if it is one."""
    from console.jobspec import script_args_of

    args = script_args_of(list(submission.command))
    named = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--dataset"]
    if submission.labels.get("kind") == "validate" and args:
        named.append(args[0])
    for value in named:
        path = Path(value)
        if path.is_absolute() and path.is_file() and path.parent != Path("/"):
            return path
    return None


def ship_dataset(api: Any, submission: Submission, namespace: str) -> Submission:
    """A job reads no file of this machine (the local server's sandbox shows none that a command
    names; a job on HF Jobs has none): a dataset file the command names goes to the jobs-artifacts
    bucket (`datasets/<hash of its bytes>/<its name>`, once per content) and that folder is mounted
    read-only where the file's folder is, so the command reads it at the path it names; the rest
    of that folder is not there, but a GRPO run's reward modules (`--rewards name.py`, which live
    beside the dataset) go with it."""
    from console.jobspec import script_args_of

    path = local_dataset(submission)
    if path is None:
        return submission
    files = [(path.read_bytes(), path.name)]
    args = script_args_of(list(submission.command))
    rewards = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--rewards"]
    for name in (n.strip() for value in rewards for n in value.split(",")):
        module = path.parent / name
        if name.endswith(".py") and "/" not in name and module.is_file():
            files.append((module.read_bytes(), name))
    digest = hashlib.sha256()
    for data, name in files:
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    folder = f"datasets/{digest.hexdigest()[:16]}"
    bucket = bucket_of(namespace)
    key = (str(getattr(api, "endpoint", "")), bucket, folder)
    with _lock:
        if key not in _shipped:
            api.create_bucket(bucket, exist_ok=True, private=True)
            api.batch_bucket_files(bucket, add=[(data, f"{folder}/{name}") for data, name in files])
            _shipped.add(key)
    volume = {"type": "bucket", "source": bucket, "mount_path": str(path.parent), "path": folder, "read_only": True}
    return replace(submission, volumes=(*submission.volumes, volume))


# ---------------------------------------------------------------------------------------------
# What the local Hub holds for the demo: the seeded base model and the tenants' dataset repos

SEED_TIMEOUT_S = 600.0
"""How long the seeding job may take (a torch import and a second of building, under load)."""


class SeedError(RuntimeError):
    """The base model could not be put on the local Hub; the message says why."""


def repo_exists(api: Any, repo_id: str, repo_type: str = "model") -> bool:
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    try:
        api.repo_info(repo_id, repo_type=repo_type)
    except (RepositoryNotFoundError, RevisionNotFoundError):
        return False
    return True


def seed_base_model(api: Any, namespace: str, token: str | None, *, repo: str | None = None,
                    report: Any = print, timeout: float = SEED_TIMEOUT_S) -> str | None:
    """Put the tiny base model (`jobspec.LOCAL_BASE_MODEL`) on the local server's Hub, once: when
    the repo has no `config.json`, a CPU job on the server builds and pushes it (the console's
    process never imports torch). Returns the job id, or None when the model was there already.
    Raises SeedError when the job fails."""
    from console import jobspec

    repo = repo or jobspec.LOCAL_BASE_MODEL
    if repo_exists(api, repo) and api.file_exists(repo, "config.json"):
        return None
    sub = jobspec.seed_submission(token, repo=repo)
    job = api.run_job(**ship(api, sub, namespace).run_kwargs(), namespace=namespace)
    report(f"Building the base model {repo} on the local Hub: job {job.id}")
    done = api.wait_for_job(job.id, timeout=timeout, poll_interval=0.5, namespace=namespace)
    if done.status.stage != COMPLETED:
        lines = [line for line in api.fetch_job_logs(job_id=job.id, namespace=namespace) if line.strip()]
        raise SeedError(f"the base model {repo} was not built (job {job.id} {done.status.stage}): "
                        f"{lines[-1] if lines else done.status.message or 'no log'}")
    return job.id


def git_blob_oid(data: bytes) -> str:
    """A file's git blob id (what the Hub's paths-info says of a regular file)."""
    import hashlib

    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def upload_dataset(api: Any, repo_id: str, file: Path, *, private: bool = True) -> bool:
    """A local dataset file as a dataset repo (`repo_id`, the file under its own name), so runs
    load it by repo id. True when it was uploaded; False when the repo's `main` holds the same
    bytes already (nothing committed)."""
    data = file.read_bytes()
    if repo_exists(api, repo_id, "dataset"):
        infos = api.get_paths_info(repo_id, [file.name], repo_type="dataset")
        if infos and getattr(infos[0], "blob_id", None) == git_blob_oid(data):
            return False
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_file(path_or_fileobj=data, path_in_repo=file.name, repo_id=repo_id, repo_type="dataset",
                    commit_message=f"{file.name} from {file.parent.name}/")
    return True
