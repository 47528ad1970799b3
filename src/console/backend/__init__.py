"""The one way the console gets a jobs client: :func:`connect` gives a :class:`Backend` with `.api`.

`.api` is always a `huggingface_hub.HfApi`; only its endpoint and token differ:

- ``backend = "hub"``: huggingface.co (or `cfg.endpoint`), with huggingface_hub's own auth
  (`HF_TOKEN`, `hf auth login`). The console never reads, prints or stores that token.
- ``backend = "local"``: the embedded Jobs server. `cfg.endpoint` if set; else the server a
  `console serve` (the data dir's daemon, or one in the foreground) announced in
  ``<data dir>/server.json``, if it answers; else, as `connect(start=...)` says: the daemon
  started in the background (the commands that act: jobs outlive the console), one started in
  this process and stopped by :meth:`Backend.close` (tests), or nothing (read-only, reports).
  The token is the local server's (``$CONSOLE_SERVER_TOKEN`` or ``<data dir>/server/token``).
  A server found through ``server.json`` is followed where it moves: a refused connection reads
  ``server.json`` again, and a server of this data dir answering on another port (the daemon
  killed and started again) gets that request and every later one (:meth:`Backend.follow_server`).

Pass ``namespace=backend.namespace`` to every jobs call: `HfApi.list_jobs` without a namespace asks
huggingface.co's whoami even when the endpoint is local (the `.api` here fills it in for
`list_jobs`, the only method with that flaw).

Every request of a connected backend goes through one resilient HTTP layer (:class:`ClientPolicy`,
installed as huggingface_hub's client factory and applied per endpoint): a bounded timeout where
huggingface_hub sets none, retries with exponential backoff and jitter for connection failures,
timeouts, 5xx and 429, and `Retry-After` honoured (up to a cap). Requests that would create
something (run a job, create a schedule, trigger, duplicate) are retried only when the server
certainly did not act on them (connection refused, 429, 503), never after a timeout or another
5xx, so a flaky link cannot start a job twice. `fetch_job_logs` resumes a cut stream where it
stopped (no line lost, none doubled). With `cfg.read_only` the `.api` refuses every call that
could change anything (:class:`ReadOnlyError`) before it reaches the network.

For local jobs, :attr:`Backend.artifacts_dir` (the stand-in for the Hub, `$CONSOLE_ARTIFACTS_DIR`
inside jobs), :attr:`Backend.trackio_dir` (`$TRACKIO_DIR` inside jobs) and
:meth:`Backend.job_workdir` (a running job's throwaway folder) say where things are on disk.
"""

from __future__ import annotations

from console.backend.client import JobsApi
from console.backend.connect import DAEMON, HERE, HUB, LOCAL, NEVER, Backend, connect
from console.backend.errors import BackendError, ReadOnlyError, ServerUnreachable
from console.backend.server_info import find_running_server, forget_server_info, write_server_info
from console.backend.transport import (
    ClientPolicy,
    ResilientTransport,
    install_policy,
    remove_policy,
    retry_after_seconds,
)

__all__ = [
    "DAEMON",
    "HERE",
    "HUB",
    "NEVER",
    "LOCAL",
    "Backend",
    "BackendError",
    "ClientPolicy",
    "JobsApi",
    "ReadOnlyError",
    "ResilientTransport",
    "ServerUnreachable",
    "connect",
    "find_running_server",
    "forget_server_info",
    "install_policy",
    "remove_policy",
    "retry_after_seconds",
    "write_server_info",
]
