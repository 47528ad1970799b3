"""The incident bundle: one Markdown file per job with every section on-call needs, the last 200
log lines as plain text, written to the data dir, and `console incident JOB_ID` printing where."""

from __future__ import annotations

import re

from tests.oncall.conftest import (
    SLEEPER,
    log_has,
    run_python,
    wait_for,
    wait_stage,
)

from console.oncall import incidents_dir, write_incident
from console.oncall.incident import SECTIONS, reproduce_command
from console.trackio_metrics import LocalTrackioReader

NOISY_FAILURE = (
    "import sys\n"
    "for i in range(300):\n    print(f'line {i}', flush=True)\n"
    "print('\\x1b]52;c;ZXZpbA==\\x07 ```  done \\x1b[31mred', flush=True)\n"
    "print('VERDICT: FAIL nan_loss: loss became NaN at step 12', flush=True)\n"
    "sys.exit(1)\n"
)


def _headings(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def test_the_bundle_of_a_failed_job_has_every_section_and_the_last_200_log_lines(backend, cfg):
    job = run_python(backend, NOISY_FAILURE, tenant="acme", run="acme-noisy")
    assert wait_stage(backend, job.id) == "ERROR"
    path = write_incident(backend.api, job.id, namespace=backend.namespace,
                          reader=LocalTrackioReader(backend.trackio_dir), project=cfg.trackio.project)
    assert path.parent == incidents_dir() and path.name.startswith(job.id) and path.suffix == ".md"
    text = path.read_text(encoding="utf-8")
    assert [h.split(" (")[0] for h in _headings(text)] == list(SECTIONS)
    assert text.startswith(f"# Incident: job {job.id} (acme sft)")
    assert "Why it failed: **FAIL nan_loss: loss became NaN at step 12** (from the verdict)" in text
    assert "| stage | ERROR |" in text and "| ERROR |" in text  # inspect and the stage history
    assert "- `tenant` = `acme`" in text and "- `run` = `acme-noisy`" in text
    assert "- So far: $" in text
    assert "the Jobs API keeps no metrics after the end" in text
    assert "No Trackio data for run `acme-noisy`" in text

    log = text.split("## Log (last 200 lines)", 1)[1]
    fence = re.search(r"^(`{3,})text$", log, re.M).group(1)
    body = log.split(fence + "text\n", 1)[1].split("\n" + fence + "\n", 1)[0].splitlines()
    assert len(body) == 200
    assert body[0] == "line 102" and body[-1].startswith("VERDICT: FAIL")
    assert len(fence) > 3  # longer than the job's own ``` so it cannot close the block
    assert "\x1b" not in text and "\x07" not in text

    [command] = [line for line in text.splitlines() if line.startswith("hf jobs run")]
    assert "--flavor t4-small" in command and "--label tenant=acme" in command
    assert "--timeout 60s" in command and "python:3.12" in command


def test_a_running_jobs_bundle_has_its_cpu_and_memory_and_forecast(backend):
    job = run_python(backend, SLEEPER, tenant="globex")
    wait_for(lambda: log_has(backend, job.id, "loading the data set"))
    path = write_incident(backend.api, job.id, namespace=backend.namespace)
    text = path.read_text(encoding="utf-8")
    assert re.search(r"^- CPU: [0-9.]+% of \d+ millicores$", text, re.M), text
    assert re.search(r"^- Memory: [0-9,]+ MiB of [0-9,]+ MiB$", text, re.M)
    assert "- Forecast: $" in text and "at timeout" in text
    assert "loading the data set" in text
    backend.api.cancel_job(job_id=job.id, namespace=backend.namespace)


def test_the_reproduce_command_names_secrets_but_never_their_values():
    from types import SimpleNamespace

    job = SimpleNamespace(
        id="j", flavor="l4x1", labels={"tenant": "acme", "timeout": "5400"}, docker_image="img",
        command=["uv", "run", "train.py"], arguments=["--lr", "1e-4"],
        environment={"CONSOLE_SCRIPT_B64": "AAAA", "MODE": "x y"}, secrets={"HF_TOKEN": "hf_secret"},
    )
    lines = reproduce_command(job, "http://127.0.0.1:8000")
    assert lines[-1] == (
        "hf jobs run --detach --flavor l4x1 --timeout 5400s --label tenant=acme --label timeout=5400 "
        "--env 'MODE=x y' --secrets HF_TOKEN img uv run train.py --lr 1e-4"
    )
    assert "hf_secret" not in "\n".join(lines) and "AAAA" not in "\n".join(lines)
    assert lines[0].startswith("# against this backend: HF_ENDPOINT=http://127.0.0.1:8000")
