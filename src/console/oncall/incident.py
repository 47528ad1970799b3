"""The incident bundle: one Markdown file with everything on-call needs about a job, to attach to
a ticket or paste in a channel.

Sections: the summary (stage, why it failed, cost so far, the timeout forecast), inspect (what
the Jobs API says), stage history, labels, cost, CPU and memory, Trackio (progress, latest
values, alerts), the command that reproduces it (`hf jobs run ...`, with secrets by name only),
and the last 200 log lines as plain text. :func:`write_incident` reads it all through the `HfApi`
(and the Trackio reader) it is given, writes `<data dir>/incidents/<job id>-<UTC time>.md` by
default and returns the path; any part it cannot read says why in its section instead.

Everything from the job is untrusted: control characters and escapes are removed, and the log
sits in a code fence longer than any run of backticks in it.

Blocking (HTTP, Trackio). No Textual, no console.ui, console.server or console.backend.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console import jobspec, paths
from console.inputs import format_duration
from console.jobs import clean_log_line, format_cost, job_row, timed_lines
from console.oncall.escapes import osc52, plain
from console.oncall.forecast import JobForecast, forecast_job, job_timeout_seconds
from console.oncall.why import why_failed
from console.prices import PriceBook, shipped_price_book
from console.stages import ACTIVE_STAGES
from console.trackio_metrics import MetricsReader, RunMetrics

LOG_LINES = 200
_BACKTICKS = re.compile(r"`+")
SECTIONS = (
    "Summary", "Inspect", "Stage history", "Labels", "Cost", "CPU and memory", "Trackio",
    "Checkpoint", "Reproduce", "Log",
)


@dataclass
class IncidentFacts:
    """What was read about the job; a field left None says its read failed (see `problems`)."""

    job: Any
    log_tail: list[str] | None = None
    sample: dict[str, Any] | None = None
    metrics: RunMetrics | None = None
    run: str | None = None
    endpoint: str = ""
    problems: dict[str, str] = field(default_factory=dict)
    """Section -> why it could not be read."""
    log_since: datetime | None = None
    """The log section holds the lines from this time on, each with its time (`--since`)."""
    checkpoint: Any = None
    """The last checkpoint the run pushed to its branch (`adapters.last_checkpoint`), if any."""
    repo: str | None = None
    """The Hub repo the run pushes to, when it names one."""
    record: Any = None
    """What the run trained on and the last PASS before it (`run_record.RunRecord`), if known."""


def incidents_dir() -> Path:
    return paths.data_dir() / "incidents"


def gather(
    api: Any,
    job_id: str,
    *,
    namespace: str | None = None,
    reader: MetricsReader | None = None,
    project: str = "console",
    log_lines: int = LOG_LINES,
    since: datetime | None = None,
) -> IncidentFacts:
    """Read the job, its log tail, one CPU/memory sample (while it runs) and its Trackio run.
    `since`: the log's lines from then on instead (the last `log_lines` of them), each with the
    time the Jobs API stamped it."""
    job = api.inspect_job(job_id=job_id, namespace=namespace)
    facts = IncidentFacts(job=job, endpoint=str(getattr(api, "endpoint", "") or ""), log_since=since)
    try:
        if since is not None:
            entries = api.fetch_job_log_entries(job_id=job_id, namespace=namespace)
            facts.log_tail = timed_lines(entries, since=since, limit=log_lines)
        else:
            lines = api.fetch_job_logs(job_id=job_id, namespace=namespace, follow=False, tail=log_lines)
            facts.log_tail = [clean_log_line(x) for x in itertools.islice(lines, log_lines)]
    except Exception as exc:
        facts.problems["Log"] = f"log unavailable: {plain(exc)}"
    if job.status.stage in ACTIVE_STAGES:
        try:
            facts.sample = next(iter(api.fetch_job_metrics(job_id=job_id, namespace=namespace)), None)
        except Exception as exc:
            facts.problems["CPU and memory"] = f"metrics unavailable: {plain(exc)}"
    else:
        facts.problems["CPU and memory"] = (
            f"the job has finished ({job.status.stage}): the Jobs API keeps no metrics after the end"
        )
    facts.run = jobspec.trackio_run_name(job.id, jobspec.labels_of(job))
    request = jobspec.read_request(job)
    facts.repo = request.hub_model_id if request is not None else None
    if facts.repo and facts.run:
        from console.adapters import last_checkpoint

        try:
            facts.checkpoint = last_checkpoint(api, facts.repo, facts.run)
        except Exception as exc:
            facts.problems["Checkpoint"] = f"{facts.repo}: {plain(exc)}"
        from console.run_record import record_for_job

        facts.record = record_for_job(api, job)
    if reader is None or not facts.run:
        facts.problems["Trackio"] = "no Trackio run for this job (no run label)" if not facts.run \
            else "no Trackio reader"
    else:
        try:
            facts.metrics = reader.run_metrics(project, facts.run)
        except Exception as exc:
            facts.problems["Trackio"] = f"{plain(reader.description)}: {plain(exc)}"
    return facts


def _when(dt: datetime | None) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if dt else "-"


def _cell(text: object) -> str:
    return plain(text, 300).replace("|", "\\|") or "-"


def _fence(lines: Sequence[str]) -> str:
    """A code fence longer than any run of backticks in the lines (so none can close it)."""
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    return "`" * max(3, longest + 1)


def reproduce_command(job: Any, endpoint: str = "") -> list[str]:
    """`hf jobs run` lines that start the same job again (secrets by name, never by value)."""
    spec = getattr(job, "job_spec", None) or job
    args = ["hf", "jobs", "run", "--detach"]
    flavor = getattr(spec, "flavor", None)
    if flavor:
        args += ["--flavor", str(flavor)]
    timeout = job_timeout_seconds(job)
    if timeout:
        args += ["--timeout", f"{int(timeout)}s"]
    for key, value in sorted(jobspec.labels_of(job).items()):
        args += ["--label", f"{key}={value}"]
    env = dict(getattr(spec, "environment", None) or {})
    shipped = env.pop(jobspec.SCRIPT_ENV, None)
    for key, value in sorted(env.items()):
        args += ["--env", f"{key}={value}"]
    for key in sorted(getattr(spec, "secrets", None) or {}):
        args += ["--secrets", str(key)]
    image = getattr(spec, "docker_image", None) or getattr(spec, "space_id", None) or "?"
    args += [str(image), *jobspec.command_of(job)]
    lines = [shlex.join(plain(a, 4000) for a in args)]
    if shipped:
        lines.insert(0, f"# the job's scripts travel in ${jobspec.SCRIPT_ENV} (left out here): "
                        "the console's rerun (R) or `console fleet apply` ships them again")
    if endpoint and not endpoint.startswith("https://huggingface.co"):
        lines.insert(0, f"# against this backend: HF_ENDPOINT={endpoint} HF_TOKEN=<its token> "
                        "(`console serve` prints the exact line)")
    return lines


def render(facts: IncidentFacts, *, now: datetime | None = None,
           prices: PriceBook | None = None) -> str:
    """The Markdown text of the bundle."""
    now = now or datetime.now(UTC)
    prices = prices or shipped_price_book()
    job = facts.job
    row = job_row(job, now=now, prices=prices)
    fc: JobForecast = forecast_job(job, facts.metrics, now=now, prices=prices)
    reason = why_failed(job, facts.log_tail or [])
    out: list[str] = []
    add = out.append

    add(f"# Incident: job {_cell(row.id)} ({_cell(row.tenant)} {_cell(row.kind)})")
    add("")
    add(f"Written {_when(now)} by console.")
    add("")
    add("## Summary")
    add("")
    add(f"- Stage: **{_cell(row.stage)}**" + (f" — {_cell(row.message)}" if row.message else ""))
    if reason is not None:
        add(f"- Why it failed: **{_cell(reason.text)}** (from the {reason.source})")
    if facts.record is not None:
        add(f"- Trained on: {_cell(facts.record.trained_on())}")
        change = facts.record.dataset_change()
        if change:
            add(f"- **{_cell(change)}**")
    add(f"- Cost so far: {format_cost(row.cost_usd)} on {_cell(row.flavor)}"
        + (f", ran {format_duration(row.running_seconds)}" if row.running_seconds is not None else ""))
    if row.active:
        add(f"- Forecast: {_cell(fc.line())}")
    add("")

    add("## Inspect")
    add("")
    add("| field | value |")
    add("| --- | --- |")
    spec = getattr(job, "job_spec", None) or job
    for name, value in (
        ("id", row.id), ("stage", row.stage), ("message", row.message),
        ("flavor", row.flavor), ("image", getattr(spec, "docker_image", None)),
        ("owner", row.owner), ("created", _when(row.created_at)), ("started", _when(row.started_at)),
        ("finished", _when(getattr(job, "finished_at", None))),
        ("timeout", format_duration(fc.timeout_seconds) if fc.timeout_seconds else None),
        ("scheduled job", row.scheduled_job_id), ("url", getattr(job, "url", None)),
    ):
        add(f"| {name} | {_cell(value)} |")
    add("")

    add("## Stage history")
    add("")
    durations = getattr(job, "durations", None)
    add("| stage | from | for |")
    add("| --- | --- | --- |")
    add(f"| SCHEDULING | {_when(row.created_at)} | "
        f"{_secs(getattr(durations, 'scheduling_secs', None), row.created_at, row.started_at)} |")
    if row.started_at is not None:
        ran = row.running_seconds
        add(f"| RUNNING | {_when(row.started_at)} | {format_duration(ran) if ran is not None else '-'} |")
    if not row.active:
        add(f"| {_cell(row.stage)} | {_when(getattr(job, 'finished_at', None))} | "
            f"{_cell(row.message)} |")
    add("")

    add("## Labels")
    add("")
    if row.labels:
        for key, value in sorted(row.labels.items()):
            add(f"- `{_cell(key)}` = `{_cell(value)}`")
    else:
        add("(none)")
    add("")

    add("## Cost")
    add("")
    add(f"- So far: {format_cost(fc.cost_so_far_usd)} ({_cell(row.flavor)}, "
        f"{prices.granularity} billing, `costs.job_cost`)")
    if fc.cost_at_timeout_usd is not None:
        add(f"- If it runs to its timeout ({format_duration(fc.timeout_seconds or 0)}): "
            f"{format_cost(fc.cost_at_timeout_usd)}")
    if fc.cost_to_finish_usd is not None:
        add(f"- When it finishes at its current rate: about {format_cost(fc.cost_to_finish_usd)}")
    add("")

    add("## CPU and memory")
    add("")
    if facts.sample:
        s = facts.sample
        add(f"- CPU: {_num(s.get('cpu_usage_pct'))}% of {_num(s.get('cpu_millicores'))} millicores")
        add(f"- Memory: {_mib(s.get('memory_used_bytes'))} of {_mib(s.get('memory_total_bytes'))}")
        for gpu_id, gpu in sorted((s.get("gpus") or {}).items()):
            if isinstance(gpu, dict):
                add(f"- GPU {_cell(gpu_id)}: {_num(gpu.get('utilization'))}% busy, "
                    f"{_mib(gpu.get('memory_used_bytes'))} of {_mib(gpu.get('memory_total_bytes'))}")
    else:
        add(_cell(facts.problems.get("CPU and memory", "no sample")))
    add("")

    add("## Trackio")
    add("")
    m = facts.metrics
    if m is not None and m.found:
        add(f"- Run `{_cell(m.run)}` in project `{_cell(m.project)}`")
        add(f"- Step {m.step if m.step is not None else '-'} of {m.max_steps or '-'}"
            + (f", {m.step_rate:.3g} steps/s" if m.step_rate else ""))
        add(f"- Latest loss {_num(m.latest_loss)}, learning rate {_num(m.latest_learning_rate)}, "
            f"grad norm {_num(m.latest_grad_norm)}; trend {m.loss_trend() or '-'}")
        if m.latest_method:  # GRPO's reward and KL, a reward model's held-out accuracy
            add("- Latest " + ", ".join(f"{name} {_num(value)}" for name, value in m.latest_method))
        if m.alerts:
            add("")
            add("| level | step | title | text |")
            add("| --- | --- | --- | --- |")
            for a in m.alerts:
                add(f"| {_cell(a.level)} | {a.step if a.step is not None else '-'} | {_cell(a.title)} "
                    f"| {_cell(a.text)} |")
        else:
            add("- No alerts")
    elif m is not None:
        add(f"No Trackio data for run `{_cell(m.run)}` in project `{_cell(m.project)}`.")
    else:
        add(_cell(facts.problems.get("Trackio", "not read")))
    add("")

    add("## Checkpoint")
    add("")
    if facts.checkpoint is not None:
        c = facts.checkpoint
        add(f"- Last checkpoint: {_cell(c.describe())}")
        if c.refused:
            add(f"- Not resumable: {_cell(c.refused)}")
        else:
            add(f"- Resume from it: `R` in the console on this job, or the run's arguments plus "
                f"`--resume-from {_cell(c.run)}`")
    elif facts.repo:
        add(_cell(facts.problems.get("Checkpoint", f"no checkpoint pushed to {facts.repo} by run {facts.run or '-'}")))
    else:
        add("The run pushes to no Hub repo: nothing to resume from.")
    add("")

    add("## Reproduce")
    add("")
    add("```sh")
    out.extend(reproduce_command(job, facts.endpoint))
    add("```")
    add("")

    if facts.log_since is not None:
        add(f"## Log (since {_when(facts.log_since)}, at most the last {LOG_LINES} lines)")
    else:
        add(f"## Log (last {LOG_LINES} lines)")
    add("")
    if facts.log_tail is None:
        add(_cell(facts.problems.get("Log", "not read")))
    else:
        fence = _fence(facts.log_tail)
        add(fence + "text")
        out.extend(facts.log_tail)
        add(fence)
    add("")
    return "\n".join(out)


def _secs(secs: Any, start: datetime | None, end: datetime | None) -> str:
    if isinstance(secs, (int, float)) and not isinstance(secs, bool):
        return format_duration(float(secs))
    if start is not None and end is not None:
        return format_duration(max(0.0, (end - start).total_seconds()))
    return "-"


def _num(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return f"{value:.4g}"


def _mib(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return f"{value / 2**20:,.0f} MiB"


def write_incident(
    api: Any,
    job_id: str,
    *,
    namespace: str | None = None,
    reader: MetricsReader | None = None,
    project: str = "console",
    prices: PriceBook | None = None,
    out_dir: Path | str | None = None,
    now: datetime | None = None,
) -> Path:
    """Read the job and write its bundle (to `<data dir>/incidents/` unless `out_dir`); returns
    the file's path."""
    now = now or datetime.now(UTC)
    facts = gather(api, job_id, namespace=namespace, reader=reader, project=project)
    return save_incident(render(facts, now=now, prices=prices), facts.job.id, out_dir=out_dir, now=now)


def save_incident(text: str, job_id: str, *, out_dir: Path | str | None = None,
                  now: datetime | None = None) -> Path:
    """Write a rendered bundle as `<job id>-<UTC time>.md` (raises OSError); returns its path."""
    now = now or datetime.now(UTC)
    folder = Path(out_dir).expanduser() if out_dir is not None else incidents_dir()
    folder.mkdir(parents=True, exist_ok=True)
    safe_id = "".join(ch for ch in str(job_id) if ch.isalnum() or ch in "-_")[:64] or "job"
    path = folder / f"{safe_id}-{now.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}.md"
    path.write_text(text, encoding="utf-8")
    return path


def clipboard_escape(path: Path) -> str | None:
    """OSC 52 text that puts the bundle's path on the clipboard (write it only when the config's
    `notify.osc52` opts in)."""
    return osc52(str(path))
