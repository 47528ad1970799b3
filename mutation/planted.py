"""Planted bugs, each in a copy of the source, each to be caught by the tests named beside it.

    .venv/bin/python mutation/planted.py                  # every planted bug (about 5 minutes on 2 cores)
    .venv/bin/python mutation/planted.py sandbox repos    # the bugs of some groups
    .venv/bin/python mutation/planted.py --list           # the bugs and their tests, no run

mutmut (`mutation/run.py`) mutates operators and constants at random inside a module's functions;
these are the edits a reviewer plants by hand: an isolation flag of the sandbox left out, a
refusal's status code changed, a stage dropped from a set or written out again, a label no one
sets. For each, the source tree is copied to mutation/work/planted/<name>/ (ignored by git:
`src/` copied, the rest linked), the one edit is applied (its text must be found exactly once, so
a moved line makes the bug unplantable and the run says so), and the named tests run against the
copy: the bug is caught when they fail, and survives when they pass. Exit status 1 when any
survives or cannot be planted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "mutation" / "work" / "planted"
LINKED = ("tests", "training", "screens.tcss", "README.md", "docs", "pyproject.toml", "mutation")

SANDBOX_NS = ["tests/server/test_sandbox.py::test_a_job_has_its_own_pid_ipc_uts_and_mount_namespaces",
              "tests/server/test_sandbox.py::test_a_job_under_a_users_server_cannot_escape_or_read_the_users_files"]
SANDBOX_SESSION = ["tests/server/test_sandbox.py::test_a_job_leads_its_own_session_and_cannot_write_the_sandboxs_root"]
SANDBOX_USER = ["tests/server/test_sandbox.py::test_a_job_under_a_users_server_cannot_escape_or_read_the_users_files"]
REPO_CODES = ["tests/server/test_repo_status_codes.py"]
ONE_DEFINITION = ["tests/core/test_one_definition.py"]


@dataclass(frozen=True)
class Planted:
    group: str
    name: str
    path: str
    old: str
    new: str
    tests: list[str]
    also: tuple[tuple[str, str], ...] = ()
    """Further (old, new) edits of the same file, for a bug that is more than one change."""


PLANTED = [
    # the sandbox: each namespace and tie bubblewrap is asked for (not `--unshare-user`: bubblewrap
    # run by a user, as it is here, makes the job a user namespace of its own without it)
    Planted("sandbox", "no-unshare-ipc", "src/console/server/host/sandbox.py",
            '"--unshare-ipc", ', "", SANDBOX_NS),
    Planted("sandbox", "no-unshare-pid", "src/console/server/host/sandbox.py",
            '"--unshare-pid", ', "", SANDBOX_NS),
    Planted("sandbox", "no-unshare-uts", "src/console/server/host/sandbox.py",
            '"--unshare-uts", ', "", SANDBOX_NS),
    Planted("sandbox", "no-new-session", "src/console/server/host/sandbox.py",
            '"--die-with-parent", "--new-session"]', '"--die-with-parent"]', SANDBOX_SESSION),
    Planted("sandbox", "no-remount-ro", "src/console/server/host/sandbox.py",
            'out += ["--remount-ro", "/"]', "pass", SANDBOX_USER),
    # the Hub's repo routes: each 403 answered as a 400
    Planted("repos", "lfs-signature-400", "src/console/server/hub/repo_routes.py",
            '"sig: invalid or missing upload signature"}, status_code=403)',
            '"sig: invalid or missing upload signature"}, status_code=400)', REPO_CODES),
    Planted("repos", "create-other-org-400", "src/console/server/hub/repos.py",
            "raise ApiError(403, f\"organization: ", "raise ApiError(400, f\"organization: ", REPO_CODES),
    Planted("repos", "move-to-other-org-400", "src/console/server/hub/repos.py",
            "raise ApiError(403, f\"toRepo: ", "raise ApiError(400, f\"toRepo: ", REPO_CODES),
    Planted("repos", "delete-default-branch-400", "src/console/server/hub/repos.py",
            "raise ApiError(403, f\"Cannot delete refs/heads/", "raise ApiError(400, f\"Cannot delete refs/heads/",
            REPO_CODES),
    # the stages: dropped from the definition, or written out again where a module decides
    Planted("stages", "scheduling-not-active", "src/console/stages.py",
            "ACTIVE_STAGES = (SCHEDULING, RUNNING)", "ACTIVE_STAGES = (RUNNING,)", ONE_DEFINITION,
            also=(("TERMINAL_STAGES = (COMPLETED, ERROR, CANCELED, DELETED)",
                   "TERMINAL_STAGES = (COMPLETED, ERROR, CANCELED, DELETED, SCHEDULING)"),)),
    Planted("stages", "ledger-pane-copy-without-scheduling", "src/console/ui/widgets/costs/ledger_pane.py",
            "if stage in ACTIVE_STAGES:", 'if stage in ("RUNNING",):', ONE_DEFINITION),
    Planted("stages", "sql-copy", "src/console/server/jobs/store.py",
            '"UPDATE jobs SET seen_at = ? WHERE stage = ?", (at, RUNNING)',
            "\"UPDATE jobs SET seen_at = ? WHERE stage = 'RUNNING'\", (at,)", ONE_DEFINITION),
    Planted("stages", "timeout-copy", "src/console/server/host/runner.py",
            'timeout = float(job.spec.get("timeoutSeconds") or HF_DEFAULT_TIMEOUT_SECONDS)',
            'timeout = float(job.spec.get("timeoutSeconds") or 1800)', ONE_DEFINITION),
    # the labels: HF's rule written out again; the encoder an embedding run's label carries
    Planted("labels", "label-length-copy", "src/console/inputs.py",
            "(at most {labels.NAME_MAX}; HF", "(at most 63; HF", ONE_DEFINITION),
    Planted("labels", "no-encoder-label", "src/console/jobspec.py",
            '**({"encoder": req.encoder} if req.kind == "embedding" and req.encoder else {}),', "",
            ["tests/ui/test_training_kinds.py::"
             "test_every_kind_in_the_jobs_table_and_the_fleet_pane_the_builder_its_own_row_last"]),
]


def plant(bug: Planted) -> Path | str:
    """A copy of the tree with `bug` in it, or why it cannot be planted."""
    work = WORK / bug.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copytree(ROOT / "src", work / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in LINKED:
        (work / name).symlink_to(ROOT / name)
    target = work / bug.path
    text = target.read_text(encoding="utf-8")
    for old, new in ((bug.old, bug.new), *bug.also):
        if text.count(old) != 1:
            return f"{bug.path}: {old!r} is there {text.count(old)} times, not once"
        text = text.replace(old, new)
    target.write_text(text, encoding="utf-8")
    return work


def run(bug: Planted) -> tuple[str, float, str]:
    """(caught | SURVIVED | UNPLANTABLE | ERROR, seconds, the last lines of the test run)."""
    start = time.monotonic()
    work = plant(bug)
    if isinstance(work, str):
        return "UNPLANTABLE", 0.0, work
    env = {**os.environ, "PYTHONPATH": str(work / "src")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           *bug.tests], cwd=work, env=env, capture_output=True, text=True)
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-3:])
    status = {0: "SURVIVED", 1: "caught"}.get(done.returncode, "ERROR")  # 1: tests failed; else no run
    shutil.rmtree(work, ignore_errors=True)
    return status, time.monotonic() - start, tail


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    groups = sorted({b.group for b in PLANTED})
    parser.add_argument("groups", nargs="*", help=f"some of: {', '.join(groups)} (or bug names)")
    parser.add_argument("--list", action="store_true", help="list the bugs and their tests, run nothing")
    args = parser.parse_args()
    chosen = [b for b in PLANTED if not args.groups or b.group in args.groups or b.name in args.groups]
    if not chosen:
        parser.error(f"no planted bug in {args.groups}; groups: {groups}")
    if args.list:
        for bug in chosen:
            print(f"{bug.group:8} {bug.name:38} {bug.path}  ->  {' '.join(bug.tests)}")
        return 0
    failed = 0
    for bug in chosen:
        status, seconds, tail = run(bug)
        failed += status != "caught"
        print(f"{status:11} {bug.group:8} {bug.name:38} {seconds:5.0f} s", flush=True)
        if status != "caught":
            print("    " + tail.replace("\n", "\n    "), flush=True)
    print(f"{len(chosen) - failed} of {len(chosen)} planted bugs caught")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
