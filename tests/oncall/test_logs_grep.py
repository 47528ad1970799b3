"""`console logs JOB --grep`: a job's log, only the lines that match, as the log pane's filter keeps
them (text with case ignored, or /regex/), from a real job on the embedded server."""

from __future__ import annotations

import os

from tests.oncall.conftest import NAMESPACE, run_python, wait_stage

from console.cli import main
from console.config import Config, save

SCRIPT = (
    "import time\n"
    "for i in range(4):\n"
    "    print(f'step {i} loss=0.{i}', flush=True)\n"
    "    time.sleep(0.3)\n"
    "print('WARNING: slow disk', flush=True)\n"
    "time.sleep(1.5)\n"
    "print('\\x1b[31mwarning: retry\\x1b[0m', flush=True)\n"
)


def test_logs_grep_prints_only_the_matching_lines_and_follows(server, backend, capsys):
    save(Config(namespace=NAMESPACE, endpoint=server.url), os.environ["CONSOLE_CONFIG"])
    job = run_python(backend, SCRIPT, tenant="acme")
    # following from the start: the lines that come later are filtered as they arrive
    assert main(["logs", job.id[-8:], "-f", "--grep", "warn"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == ["WARNING: slow disk", "warning: retry"]  # escapes removed
    assert err.strip().startswith("2 of ") and "matched 'warn'" in err
    assert wait_stage(backend, job.id) == "COMPLETED"

    assert main(["logs", job.id, "--grep", "/step [13] /"]) == 0
    assert capsys.readouterr().out.splitlines() == ["step 1 loss=0.1", "step 3 loss=0.3"]
    assert main(["logs", job.id]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 6


def test_logs_refuses_a_bad_filter_before_asking_anything(capsys):
    assert main(["logs", "abcdef12", "--grep", "/([/"]) == 2
    assert "logs: filter '/([/': not a regular expression" in capsys.readouterr().err
    assert main(["logs", "abcdef12", "--tail", "-3"]) == 2
    assert "--tail must be from 1" in capsys.readouterr().err
