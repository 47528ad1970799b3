"""How a job's process starts: its environment (a short allow-list of the server's, never its
tokens) and its share of the machine's cores. Used by the runner (:mod:`console.server.host.runner`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from console.server import paths
from console.server.host import sandbox
from console.server.jobs.store import JobRecord

_PASS_ENV = {
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "SHELL", "TERM",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "HF_HOME",
    "HF_HUB_CACHE", "HF_DATASETS_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE",
    "TORCH_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "TOKENIZERS_PARALLELISM",
}
_PASS_PREFIXES = ("LC_", "UV_", "PIP_")


def format_seconds(seconds: float) -> str:
    """`45s`, `2m 5s`, `1h 30m` — how timeouts read in messages."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        m, s = divmod(s, 60)
        return f"{m}m {s}s" if s else f"{m}m"
    h, rest = divmod(s, 3600)
    m = rest // 60
    return f"{h}h {m}m" if m else f"{h}h"


def cpu_share(max_running: int) -> int:
    """The threads a job's numeric libraries may use: this machine's cores shared among the
    server's job slots (at least one). Jobs on HF Jobs have their flavor's cores to themselves;
    here up to `max_running` jobs share one machine, and BLAS / OpenMP pools sized to every core
    spin against each other when several run (a step of a tiny model then takes seconds)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, max_running))


def job_environment(job: JobRecord, *, sandboxed: bool = False, hub_endpoint: str | None = None,
                    threads: int | None = None, secrets: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a job's process starts with.

    A clean base (PATH, HOME, locale, caches; never the server's own tokens), the server's Python
    first on PATH, then the job's `environment`, then its `secrets`, plus what the console's jobs
    rely on: $JOB_ID, $CONSOLE_ARTIFACTS_DIR (the folder of a run that names no Hub repo), $TRACKIO_DIR (the
    shared Trackio store), PYTHONUNBUFFERED=1 so logs stream, and HF_HUB_OFFLINE=1 unless the job
    sets it. $CONSOLE_ARTIFACTS_DIR is the job's tenant's folder of the store (its `tenant` label).
    `sandboxed`: $HOME, the XDG folders and the caches are the sandbox's (:func:`sandbox.job_environment`).
    `hub_endpoint`: this server's URL, the job's $HF_ENDPOINT unless it sets one: the local Hub
    its repos and downloads go to, as a job on HF Jobs reaches huggingface.co (with the token it
    is given as a secret, if any; none is given otherwise).
    `threads`: $OMP_NUM_THREADS and $MKL_NUM_THREADS (the job's share of the cores,
    :func:`cpu_share`) unless the server's environment or the job sets them.
    `secrets`: the job's secrets as it gets them (the server's token replaced by the job's own,
    :mod:`console.server.host.grants`); its stored ones when None.
    """
    env = {
        k: v for k, v in os.environ.items() if k in _PASS_ENV or k.startswith(_PASS_PREFIXES)
    }
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", os.defpath)
    env["PYTHONUNBUFFERED"] = "1"
    env["HF_HUB_DISABLE_TELEMETRY"] = "1"
    env["JOB_ID"] = job.id
    env["CONSOLE_ARTIFACTS_DIR"] = str(paths.tenant_artifacts_dir((job.labels or {}).get("tenant")))
    env["TMPDIR"] = str(paths.job_workdir(job.id) / ".tmp")
    env["TRACKIO_DIR"] = str(paths.trackio_dir())
    if hub_endpoint:
        env["HF_ENDPOINT"] = hub_endpoint
    if threads:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(name, str(threads))
    if sandboxed:
        env.update(sandbox.job_environment(paths.job_workdir(job.id)))
    user_env = dict(job.spec.get("environment") or {})
    env.update(user_env)
    env.update(job.secrets if secrets is None else secrets)
    if "HF_HUB_OFFLINE" not in user_env and "HF_HUB_OFFLINE" not in job.secrets:
        env["HF_HUB_OFFLINE"] = "1"
    return env
