"""How the console builds a job submission, and reads one back from what HF Jobs returns.

A :class:`TrainingRequest` says what to train (tenant, dataset, base model, size, examples, epochs,
flavor...) and how: its `kind` (`console.kinds`) picks the recipe in `training/`: a tenant's SFT,
DPO, KTO or GRPO LoRA adapter, its reward model, its embedding model (a bi-, cross- or sparse
encoder), the builder model (SFT, LoRA or with `full` every weight: one larger model on its own
cadence, reference §4(a)), or the CPU preflight of a dataset for one of them. Secrets
(``HF_TOKEN``) go in a submission's ``secrets`` only and are never shown or written anywhere.

Its modules, by responsibility:

- :mod:`~console.jobspec.request`: the request, its defaults and what refuses it;
- :mod:`~console.jobspec.build`: the :class:`Submission` (:func:`build_submission`) and the recipe
  bundle it ships;
- :mod:`~console.jobspec.readback`: a ``JobInfo`` / ``ScheduledJobInfo`` read back
  (:func:`read_request`, labels, limits) and the light records the console keeps of them;
- :mod:`~console.jobspec.wire`: what both halves share (the label number encoding, the argument
  order, the run's name), so a change to one half is seen beside the other;
  `tests/fleet/test_jobspec.py` round-trips them.

This package re-exports the names its many callers read as ``jobspec.<name>``; each is defined
once, in the module above. No UI, no network.
"""

from console.jobspec.build import (
    ARTIFACTS_BUCKET,
    DATASET_CHECKS,
    HUB_IMAGE,
    LOCAL_BASE_MODEL,
    LOCAL_IMAGE,
    SHARED_PACKAGE,
    TRAINING_MOUNT,
    Submission,
    SubmissionError,
    build_submission,
    bundle_files,
    bundle_name,
    estimate_timeout,
    hub_command,
    seed_submission,
)
from console.jobspec.readback import (
    command_of,
    compact_job,
    exposed_ports_of,
    keep_schedule,
    labels_held,
    labels_of,
    read_request,
    run_limit_seconds,
    script_args_of,
)
from console.jobspec.request import (
    DEFAULT_PROMOTE_MARGIN,
    ENCODERS,
    PREFLIGHT_FLAVOR,
    PREFLIGHT_TIMEOUT_SECONDS,
    PROMOTE_POLICIES,
    RECIPE_BATCH_SIZE,
    SPACE_ID_RE,
    TINY_BASE_MODEL,
    TrainingRequest,
    dataset_key,
    dataset_owners,
    default_destination,
    fit_problem,
    for_backend,
    hub_model_id_for,
    hub_model_id_problem,
    preflight_request,
    with_config_defaults,
    with_defaults,
)
from console.jobspec.wire import (
    SCRIPT_ENV,
    format_number,
    label_number,
    label_value,
    number_label,
    retry_words,
    trackio_run_name,
)

__all__ = [
    "ARTIFACTS_BUCKET", "DATASET_CHECKS", "HUB_IMAGE", "LOCAL_BASE_MODEL", "LOCAL_IMAGE", "SHARED_PACKAGE",
    "TRAINING_MOUNT", "Submission", "SubmissionError", "build_submission", "bundle_files", "bundle_name",
    "estimate_timeout", "hub_command", "seed_submission",
    "command_of", "compact_job", "exposed_ports_of", "keep_schedule", "labels_held", "labels_of", "read_request",
    "run_limit_seconds", "script_args_of",
    "DEFAULT_PROMOTE_MARGIN", "ENCODERS", "PREFLIGHT_FLAVOR", "PREFLIGHT_TIMEOUT_SECONDS", "PROMOTE_POLICIES",
    "RECIPE_BATCH_SIZE", "SPACE_ID_RE", "TINY_BASE_MODEL", "TrainingRequest", "dataset_key", "dataset_owners",
    "default_destination", "fit_problem", "for_backend", "hub_model_id_for", "hub_model_id_problem",
    "preflight_request", "with_config_defaults", "with_defaults",
    "SCRIPT_ENV", "format_number", "label_number", "label_value", "number_label", "retry_words", "trackio_run_name",
]
