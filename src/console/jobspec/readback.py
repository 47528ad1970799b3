"""A submission read back from what HF Jobs returns: a ``JobInfo`` or ``ScheduledJobInfo``'s
labels, limits and ports, its :class:`~console.jobspec.request.TrainingRequest`
(:func:`read_request`: the labels carry what the cost model needs and the command's arguments the
rest, so any console can rebuild the fleet from HF Jobs alone), and the lighter records the console
keeps of jobs and schedules (:func:`compact_job`, :func:`keep_schedule`).

No UI, no network.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from console.jobspec.request import PROMOTE_POLICIES, TINY_BASE_MODEL, TrainingRequest
from console.jobspec.wire import ARG_FIELDS, DATASETS_CACHE_DIR, DATASETS_CACHE_MOUNT, SCRIPT_ENV, label_number
from console.strings import shared, shared_owner, shared_record, shared_status


def labels_of(info: Any) -> dict[str, str]:
    """Labels of a JobInfo or ScheduledJobInfo (its job_spec's), never None: a copy to change."""
    return dict(labels_held(info))


def labels_held(info: Any) -> dict[str, str]:
    """The labels dict a JobInfo or ScheduledJobInfo holds (its job_spec's), not a copy: to read
    and keep beside the record (a job's row), never to change. {} when it has none."""
    labels = getattr(info, "labels", None)
    if labels is None and getattr(info, "job_spec", None) is not None:
        labels = info.job_spec.labels
    return labels if isinstance(labels, dict) else dict(labels or {})


_TIMED_OUT_AFTER = re.compile(r"timed out after ((?:\d+\s*[hms]\s*)+)", re.IGNORECASE)
_DURATION_PART = re.compile(r"(\d+)\s*([hms])", re.IGNORECASE)


def run_limit_seconds(info: Any) -> float | None:
    """The most a job can run, in seconds: its timeout x its attempts (each attempt has the whole
    timeout), or None when the job does not say. JobInfo carries no timeout, so it is the `timeout`
    label the console puts on its jobs, else what a timed-out job's message says ("Job timed out
    after 2m 5s", as the embedded server writes it). What `costs.job_cost` caps billing at."""
    timeout = label_number(labels_of(info).get("timeout"))
    if timeout is None:
        message = str(getattr(getattr(info, "status", None), "message", None) or "")
        found = _TIMED_OUT_AFTER.search(message)
        if found:
            unit = {"h": 3600, "m": 60, "s": 1}
            timeout = float(sum(int(n) * unit[u.lower()] for n, u in _DURATION_PART.findall(found.group(1))))
    if timeout is None or not timeout > 0 or timeout == float("inf"):
        return None
    retry = getattr(info, "retry", None)
    attempts = 1 + (retry if isinstance(retry, int) and not isinstance(retry, bool) and retry > 0 else 0)
    return timeout * attempts


def exposed_ports_of(info: Any) -> int:
    """How many ports a job exposes through the Jobs proxy (public ones included, each counted once):
    each is billed a flat $0.01/h (`costs.job_cost`). The Jobs API says the job's ports, not since
    when, so each is billed for the job's whole running time."""
    ports = {str(p) for p in (getattr(info, "expose", None) or [])}
    ports |= {str(p) for p in (getattr(info, "expose_public", None) or [])}
    return len(ports)


def compact_job(info: Any) -> Any:
    """The same JobInfo / ScheduledJobInfo, lighter to keep: its shipped script bundle
    (``CONSOLE_SCRIPT_B64``) dropped and its repeated strings shared.

    On the Hub every console job carries its script and the shared package, compressed, in its
    environment, about 28 KB; a list of 10,000 jobs would keep 280 MB of them. What the console
    reads back from a job (its request, labels and times) never needs the script: a rerun builds
    a fresh submission. The JSON decoder makes a new string for every label, argument and flavor
    of every job; most are the same few hundred strings, so each is kept once, and so are the
    small records jobs repeat: their mounts, their owner, a finished job's status
    (`console.strings.shared_record`). An empty environment, secrets or arguments is kept as
    None, as huggingface_hub itself keeps no volumes.
    """
    try:
        spec = getattr(info, "job_spec", None) or info
        env = getattr(spec, "environment", None)
        if env:
            spec.environment = {shared(k): shared(v) for k, v in env.items() if k != SCRIPT_ENV}
        labels = getattr(spec, "labels", None)
        if labels:
            spec.labels = {shared(k): shared(v) for k, v in labels.items()}
        for name in ("command", "arguments"):
            items = getattr(spec, name, None)
            if items:
                setattr(spec, name, [shared(x) for x in items])
        secrets = getattr(spec, "secrets", None)  # their names: a dict (values hidden) or a list
        if isinstance(secrets, dict) and secrets:
            spec.secrets = {shared(k): v for k, v in secrets.items()}
        elif isinstance(secrets, list) and secrets:
            spec.secrets = [shared(x) for x in secrets]
        volumes = getattr(spec, "volumes", None)
        if volumes:
            spec.volumes = [_shared_volume(v) for v in volumes]
        for obj, names in ((spec, ("docker_image", "flavor")), (info, ("endpoint", "schedule")),
                           (getattr(info, "status", None), ("stage", "message"))):
            for name in names:
                value = getattr(obj, name, None) if obj is not None else None
                if isinstance(value, str):
                    setattr(obj, name, shared(value))
        for name in ("environment", "secrets", "arguments"):
            # an empty one as the API may send it, None (huggingface_hub's own for no volumes):
            # 10,000 kept jobs would hold 30,000 empty dicts and lists
            if getattr(spec, name, None) is not None and not getattr(spec, name):
                setattr(spec, name, None)
        if getattr(info, "owner", None) is not None:
            info.owner = shared_owner(info.owner)
        if spec is info and getattr(info, "status", None) is not None:  # a job, not a schedule
            info.status = shared_status(info.status)
    except AttributeError:  # a read-only (frozen) record: kept as it came
        pass
    return info


@dataclass(slots=True, eq=False)
class KeptSchedule:
    """A scheduled job as the console keeps it in memory: what the fleet, the costs forecast, the
    watch and a reschedule read of it, its training request read once (`read_request` answers
    with it). Read like a `ScheduledJobInfo`: its `job_spec` is itself (labels, flavor, timeout).
    A third of the `ScheduledJobInfo` it came from: a fleet keeps 10,000 of them."""

    id: str
    schedule: str | None
    suspend: bool | None
    status: Any
    """The schedule's `ScheduledJobStatus` (`next_job_run_at`, `last_job`)."""
    labels: dict[str, str]
    flavor: str | None
    timeout: int | None
    request: TrainingRequest | None
    digest: str = field(default="", compare=False)
    """What it holds, digested (`console.cache.apart.digest_of`) where it was read apart."""

    @property
    def job_spec(self) -> KeptSchedule:
        return self


def keep_schedule(sj: Any) -> KeptSchedule:
    """What the console keeps of a `ScheduledJobInfo` (`KeptSchedule`), its strings shared."""
    if isinstance(sj, KeptSchedule):
        return sj
    sj = compact_job(sj)
    spec = sj.job_spec
    flavor = getattr(spec, "flavor", None)
    return KeptSchedule(
        id=sj.id,
        schedule=sj.schedule,
        suspend=sj.suspend,
        status=sj.status,
        labels=spec.labels or {},
        flavor=shared(str(getattr(flavor, "value", flavor))) if flavor is not None else None,
        timeout=spec.timeout,
        request=read_request(sj),
    )


_VOLUME_FIELDS = ("type", "source", "mount_path", "revision", "read_only", "path")


def _shared_volume(volume: Any) -> Any:
    return shared_record(volume, _VOLUME_FIELDS, "volume")


def command_of(info: Any) -> list[str]:
    spec = getattr(info, "job_spec", None) or info
    return list(getattr(spec, "command", None) or []) + list(getattr(spec, "arguments", None) or [])


def script_args_of(command: list[str]) -> list[str]:
    """The script's own arguments, after `uv run [--with PKG]... SCRIPT` (or the `bash -c ... NAME`
    wrapper older consoles shipped scripts in)."""
    if len(command) >= 3 and command[0] == "uv" and command[1] == "run":
        i = 2
        while i + 1 < len(command) and command[i] in ("--with", "--python"):
            i += 2
        return command[i + 1:]
    if len(command) >= 4 and command[0] == "bash" and command[1] == "-c":
        return command[4:]
    return []


def _parse_float(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "") else None
    except ValueError:
        return None


def read_request(info: Any) -> TrainingRequest | None:
    """The TrainingRequest behind a console job or scheduled job (None for other jobs)."""
    if isinstance(info, KeptSchedule):
        return info.request
    labels = labels_of(info)
    if labels.get("app") != "console" or not labels.get("tenant"):
        return None
    args = script_args_of(command_of(info))
    values: dict[str, str] = {}
    i = 0
    flags = {**dict(ARG_FIELDS), "--kind": "encoder", "--method": "validates", "--rewards": "rewards"}
    if labels.get("kind") == "validate" and args:
        values["dataset"] = args[0]
    while i < len(args):
        if args[i] in flags and i + 1 < len(args):
            values[flags[args[i]]] = args[i + 1]
            i += 2
        else:
            i += 1
    spec = getattr(info, "job_spec", None) or info
    env = dict(getattr(spec, "environment", None) or {})
    env.pop(SCRIPT_ENV, None)
    cache = next((v.source for v in getattr(spec, "volumes", None) or ()
                  if getattr(v, "type", None) == "bucket" and v.mount_path == DATASETS_CACHE_MOUNT
                  and not v.read_only), None)
    if cache is not None and env.get("HF_DATASETS_CACHE") == DATASETS_CACHE_DIR:
        env.pop("HF_DATASETS_CACHE")
    timeout = getattr(spec, "timeout", None) or label_number(labels.get("timeout"))

    def _int(name: str) -> int | None:
        v = _parse_float(values.get(name))
        return int(v) if v is not None else None

    return TrainingRequest(
        tenant=labels["tenant"],
        dataset=values.get("dataset", ""),
        base_model=values.get("base_model", TINY_BASE_MODEL),
        model_b=label_number(labels.get("model_b")) or 1.0,
        examples=int(label_number(labels.get("examples")) or 1000),
        epochs=label_number(labels.get("epochs")) or _parse_float(values.get("epochs")) or 3.0,
        flavor=str(getattr(spec, "flavor", None) or "l4x1"),
        kind=labels.get("kind", "sft"),
        env=labels.get("env", "dev"),
        unsloth=labels.get("unsloth") == "1",
        full=labels.get("full") == "1" or "--full" in args,
        encoder=values.get("encoder") if labels.get("kind") == "embedding" else None,
        validates=values.get("validates") if labels.get("kind") == "validate" else None,
        rewards=values.get("rewards") if labels.get("kind") == "grpo" else None,
        max_steps=_int("max_steps"),
        learning_rate=_parse_float(values.get("learning_rate")),
        lora_r=_int("lora_r"),
        lora_alpha=_int("lora_alpha"),
        promote=values.get("promote") if values.get("promote") in PROMOTE_POLICIES else None,
        promote_margin=label_number(labels.get("margin")) if values.get("promote") == "on_eval" else None,
        resume_from=values.get("resume_from"),
        hub_model_id=values.get("hub_model_id"),
        run_name=values.get("run_name") or labels.get("run"),
        scheduled=getattr(info, "job_spec", None) is not None and "run_name" not in values,
        trackio_project=values.get("trackio_project"),
        trackio_space_id=values.get("trackio_space_id"),
        datasets_cache=cache,
        timeout_seconds=int(timeout) if timeout else None,
        extra_env={k: str(v) for k, v in env.items()},
        retry=int(label_number(labels.get("retry")) or 0),
        retry_max_usd=label_number(labels.get("retry_max_usd")),
        retry_of=labels.get("retry_of") or None,
        attempt=int(label_number(labels.get("attempt")) or 0),
    )

