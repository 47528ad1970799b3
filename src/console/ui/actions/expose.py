"""`e`: a running job's exposed ports: the URLs it serves now, and one more port exposed.

The Jobs API replaces a job's whole port list (`HfApi.update_job_expose`: ports in neither list
close), so the new port is added to the ports the job exposes already, public ones kept public.
An exposed port costs a flat $0.01/h on HF Jobs (reference §3), said in the confirmation. Read-only
shows the URLs and refuses the change.
"""

from __future__ import annotations

from typing import Any

from console.jobs import clean_log_line
from console.prices import EXPOSED_PORT_PRICE_PER_HOUR
from console.stages import RUNNING
from console.ui.actions import confirm_then_run, refuse_if_read_only
from console.ui.base import ConsoleBase


def exposed(info: Any) -> tuple[list[int], list[int], list[str]]:
    """A job's exposed ports, its public ones and the URLs they are served at (from its JobInfo)."""
    if info is None:
        return [], [], []
    ports = [int(p) for p in (getattr(info, "expose", None) or [])]
    public = [int(p) for p in (getattr(info, "expose_public", None) or [])]
    urls = [str(u) for u in (getattr(info.status, "expose_urls", None) or [])]
    return ports, public, urls


def parse_port(text: str) -> int:
    """A port from what was typed; ValueError with a one-line message naming the field."""
    value = text.strip()
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise ValueError(f"port: expected a whole number from 1 to 65535, got {clean_log_line(value)[:40]!r}")
    return int(value)


def expose_port(app: ConsoleBase) -> None:
    job = app.selected_job()
    if job is None:
        app.notify("No job selected", severity="warning")
        return
    if job.stage != RUNNING:
        app.notify(f"Job {job.id} is {job.stage}: only a running job serves ports", severity="warning")
        return
    ports, public, urls = exposed(app.refresher.job_info(job.id))
    now = ", ".join(urls) if urls else "no port exposed"
    if app.read_only:
        app.notify(f"Job {job.id}: {now}", title="exposed", timeout=8)
    if refuse_if_read_only(app, "expose_port"):
        return

    def chosen(text: str | None) -> None:
        if text is None or not text.strip():
            app.notify("Expose: not done", timeout=3)
            return
        try:
            port = parse_port(text)
        except ValueError as exc:
            app.notify(str(exc), severity="error")
            return
        if port in ports or port in public:
            app.notify(f"Job {job.id} exposes port {port} already: {now}", timeout=6)
            return
        _confirm(app, job, port, ports, public)

    from console.ui.screens.prompt import PromptScreen  # modal screens load on first use

    app.push_screen(PromptScreen(f"Job {job.id}: {now}. Expose port:", "", "8000"), chosen)


def _confirm(app: ConsoleBase, job: Any, port: int, ports: list[int], public: list[int]) -> None:
    ns = app.namespace

    def expose() -> str:
        private = [p for p in ports if p not in public]  # the public ones stay public
        info = app.api.update_job_expose(job_id=job.id, expose=[*private, port], expose_public=public or None,
                                         namespace=ns)
        urls = exposed(info)[2]
        return f"Exposed port {port} of {job.id}: " + (", ".join(urls) if urls else "no URL yet")

    confirm_then_run(
        app,
        f"Expose port {port} of job {job.id}?",
        [
            f"tenant {job.tenant}, {job.kind}, RUNNING on {job.flavor}",
            f"adds ${EXPOSED_PORT_PRICE_PER_HOUR:.2f}/h while it runs (HF Jobs: exposed ports add a flat "
            f"${EXPOSED_PORT_PRICE_PER_HOUR:.2f}/hr, reference §3)",
            "reachable with an HF token that can read the job's namespace",
        ],
        yes_label="Expose",
        description=f"Expose port {port} of {job.id}",
        fn=expose,
        declined="Expose: not done",
    )
