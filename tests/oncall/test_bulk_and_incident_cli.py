"""`console bulk` and `console incident` on the command line: the plan, the typed count, the
refusals, and where the incident bundle went."""

from __future__ import annotations

import os
from pathlib import Path

from tests.oncall.conftest import NAMESPACE, job_stage, run_python, wait_stage

from console.cli import main
from console.config import Config, save


def test_bulk_cancel_from_the_command_line_refuses_a_wrong_count_and_read_only(
    server, backend, fleet, capsys
):
    save(Config(namespace=NAMESPACE, endpoint=server.url), os.environ["CONSOLE_CONFIG"])
    assert main(["bulk", "cancel", "tenant:acme"]) == 0  # no count: the plan only
    out = capsys.readouterr()
    assert all(j in out.out for j in fleet["acme"]) and fleet["globex"] not in out.out
    assert "--yes-count 2" in out.err

    assert main(["bulk", "cancel", "tenant:acme", "--yes-count", "3"]) == 2
    assert "must be the count 2" in capsys.readouterr().err
    assert main(["--read-only", "bulk", "cancel", "tenant:acme", "--yes-count", "2"]) == 2
    assert "read-only" in capsys.readouterr().err
    assert all(job_stage(backend, j) == "RUNNING" for j in fleet["acme"])

    assert main(["bulk", "cancel", "tenant:acme", "--yes-count", "2"]) == 0
    assert "2 of 2 done" in capsys.readouterr().out
    for job_id in fleet["acme"]:
        assert wait_stage(backend, job_id) == "CANCELED"
    assert job_stage(backend, fleet["globex"]) == "RUNNING"


def test_console_incident_prints_where_the_bundle_is(server, backend, capsys, tmp_path):
    save(Config(namespace=NAMESPACE, endpoint=server.url), os.environ["CONSOLE_CONFIG"])
    job = run_python(backend, "print('hello')", tenant="acme")
    assert wait_stage(backend, job.id) == "COMPLETED"
    assert main(["incident", job.id, "--out", str(tmp_path / "out")]) == 0
    [printed] = capsys.readouterr().out.splitlines()
    path = Path(printed)
    assert path.parent == tmp_path / "out" and "hello" in path.read_text(encoding="utf-8")
    assert main(["incident", "nosuchjob"]) == 2
    assert "no job 'nosuchjob' in namespace 'pager'" in capsys.readouterr().err


def test_console_incident_takes_a_tenant_and_writes_its_newest_failed_job(server, backend, capsys, tmp_path):
    save(Config(namespace=NAMESPACE, endpoint=server.url), os.environ["CONSOLE_CONFIG"])
    older = run_python(backend, "raise SystemExit('older failure')", tenant="wayne")
    assert wait_stage(backend, older.id) == "ERROR"
    newer = run_python(backend, "raise SystemExit('newest failure')", tenant="wayne")
    assert wait_stage(backend, newer.id) == "ERROR"
    passed = run_python(backend, "print('fine')", tenant="wayne")  # newest of all, but it passed
    assert wait_stage(backend, passed.id) == "COMPLETED"
    other = run_python(backend, "raise SystemExit('not wayne')", tenant="stark")
    assert wait_stage(backend, other.id) == "ERROR"

    assert main(["incident", "wayne", "--out", str(tmp_path / "out")]) == 0
    [printed] = capsys.readouterr().out.splitlines()
    path = Path(printed)
    assert path.name.startswith(newer.id)
    assert "newest failure" in path.read_text(encoding="utf-8")

    assert main(["incident", "no-such-tenant"]) == 2
    assert "no tenant 'no-such-tenant' in namespace 'pager'" in capsys.readouterr().err
    ok = run_python(backend, "print('fine')", tenant="umbrella")
    assert wait_stage(backend, ok.id) == "COMPLETED"
    assert main(["incident", "umbrella"]) == 2
    assert "tenant 'umbrella' has no failed job" in capsys.readouterr().err
