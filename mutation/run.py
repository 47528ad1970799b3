"""Mutation testing of the core with mutmut: one module at a time, each against its fast tests.

    .venv/bin/python mutation/run.py                 # every module below, in this order
    .venv/bin/python mutation/run.py costs jobs      # some of them
    .venv/bin/python mutation/run.py --report        # the scores of the last runs, no new run
    .venv/bin/python mutation/run.py --survivors jobs   # the diff of each surviving mutant

Each module runs in its own folder, mutation/work/<module>/ (ignored by git): links to src/,
tests/ and training/, and a pyproject.toml that is the project's plus a [tool.mutmut] table
naming the files to mutate and the test files to run. mutmut first runs those tests once to learn
which test reaches which function, then runs, for each mutant, only the tests that reach the
mutated function. A module's score counts only the mutants of its `names` (the functions that
are the module's subject), killed / (killed + survived + no tests); a timeout counts as killed
(the mutant hung the tests), as mutmut reports it.

`jobkit` and `validate_dataset` are imported by the tests as top-level modules (the scripts put
training/ on sys.path); mutmut names its mutants after the file path (training.jobkit.run,
training.validate_dataset), so the training module loads `alias_jobkit.py` as a pytest plugin,
which makes the top-level names those same modules.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "mutation" / "work"

# module -> files mutmut mutates, the mutant names that make the score (globs), the tests it runs.
MODULES: dict[str, dict[str, list[str]]] = {
    "costs": {
        "mutate": ["src/console/costs.py", "src/console/scenario.py", "src/console/prices.py"],
        "names": ["console.costs.*", "console.scenario.*", "console.prices.*"],
        # the shipped table is built by _gpu/_cpu when console.prices is imported, before mutmut
        # forks a mutant's test run: their mutants change nothing any test can see
        "exclude": ["console.prices.x__gpu__*", "console.prices.x__cpu__*"],
        "tests": ["tests/core/test_costs.py", "tests/core/test_fleet_projection.py",
                  "tests/ledger/test_one_cost.py", "tests/core/test_live_prices.py",
                  "tests/core/test_projection_record.py"],
    },
    "ledger": {
        # costing each job and projecting the month; the fleet rollup (fleet_rollup.py, tested
        # with the fleet's kinds) and the refresh glue (live.py) are not in this round
        "mutate": ["src/console/ledger/entries.py", "src/console/ledger/forecast.py",
                   "src/console/ledger/calibration.py"],
        "names": ["console.ledger.*"],
        "tests": ["tests/ledger/test_ledger.py", "tests/ledger/test_ledger_totals.py",
                  "tests/ledger/test_one_cost.py", "tests/oncall/test_forecast.py",
                  "tests/ledger/test_schedule_forecast.py", "tests/ledger/test_entry_record.py"],
    },
    "jobs": {
        "mutate": ["src/console/jobs.py"],
        "names": ["console.jobs.xǁJobFilterǁ*", "console.jobs.x_parse_filter__*", "console.jobs.xǁJobRowǁtext__*"],
        "tests": ["tests/core/test_jobs_filter.py"],
    },
    "fleet": {
        "mutate": ["src/console/fleet/apply.py"],
        "names": ["console.fleet.apply.*"],
        "tests": ["tests/fleet/test_plan_rules.py"],
    },
    "server": {
        # the checks every submitted job spec goes through (400s naming the field); the bearer
        # token guard is the "auth" module below
        "mutate": ["src/console/server/jobs/wire.py", "src/console/server/jobs/schema.py",
                   "src/console/server/jobs/schemaerrors.py"],
        "names": ["console.server.jobs.wire.x_check_unicode__*", "console.server.jobs.wire.x__dict_items__*",
                  "console.server.jobs.wire.x__list_items__*", "console.server.jobs.schema.*",
                  "console.server.jobs.schemaerrors.*"],
        "tests": ["tests/server/test_wire_checks.py"],
    },
    "auth": {
        # the guard every route of the embedded server goes through (bearer token, namespace, the
        # answer to what a route raises) and the error answer it builds; the app runs in-process
        "mutate": ["src/console/server/app.py"],
        "names": ["console.server.app.x_guard__*", "console.server.app.x__internal__*",
                  "console.server.app.x__error__*"],
        "tests": ["tests/server/test_auth_guard.py"],
    },
    "training": {
        "mutate": ["training/jobkit/run.py", "training/validate_dataset.py"],
        "names": ["training.jobkit.run.xǁLossMonitorǁ*", "training.jobkit.run.x_finish__*",
                  "training.validate_dataset.*"],
        "tests": ["tests/training/test_verdict_rule.py", "tests/training/test_validate_dataset.py",
                  "tests/training/test_jobkit.py", "tests/training/test_embedding_rows_and_metric_rule.py",
                  "tests/training/test_validate_dataset_report.py", "tests/training/test_verdict_edges.py",
                  "tests/training/test_conversation_rows.py", "tests/training/test_monitor_alerts.py",
                  "tests/training/test_dataset_row_messages.py", "tests/training/test_dataset_reading.py",
                  "tests/training/test_dataset_report_output.py"],
        "plugins": ["alias_jobkit"],
        # a mutated module imports mutmut's trampoline: not the standard library alone
        "pytest_args": ["--deselect",
                        "tests/training/test_jobkit.py::test_shared_modules_import_only_the_standard_library"],
    },
}

# What the tests read beside the code (copied into mutants/ as they are). The training module
# mutates jobkit and validate_dataset.py, which mutmut copies itself, so it takes the rest of
# training/ file by file.
ALSO_COPY = ["README.md", "screens.tcss", "docs"]
TRAINING_REST = ["training/data", "training/fleet.example.toml", "training/README.md", "training/sft_lora.py",
                 "training/dpo_lora.py", "training/kto_lora.py", "training/sentence_transformer.py"]


def _toml_list(items: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def prepare(module: str) -> Path:
    spec = MODULES[module]
    work = WORK / module
    work.mkdir(parents=True, exist_ok=True)
    for name in ("src", "tests", "training", "README.md", "screens.tcss", "docs", "mutation"):
        link = work / name
        if not link.exists():
            link.symlink_to(ROOT / name)
    mutates_training = any(m.startswith("training/") for m in spec["mutate"])
    source_paths = ["src/console"] + (["training/jobkit", "training/validate_dataset.py"] if mutates_training else [])
    also_copy = ALSO_COPY + (TRAINING_REST if mutates_training else ["training"])
    cli = ["-p", "no:cacheprovider", "-p", "no:randomly", "-x", "-q"]
    for plugin in spec.get("plugins", []):
        cli += ["-p", plugin]
    cli += spec.get("pytest_args", [])
    table = "\n".join([
        "", "[tool.mutmut]",
        f"source_paths = {_toml_list(source_paths)}",
        f"only_mutate = {_toml_list(spec['mutate'])}",
        f"also_copy = {_toml_list(also_copy)}",
        f"pytest_add_cli_args = {_toml_list(cli)}",
        f"pytest_add_cli_args_test_selection = {_toml_list(spec['tests'])}",
        "use_git_change_detection = false",
        "",
    ])
    base = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    base = re.sub(r"\n\[tool\.mutmut\].*?(?=\n\[|\Z)", "\n", base, flags=re.S)
    (work / "pyproject.toml").write_text(base + table, encoding="utf-8")
    return work


def run(module: str, jobs: int) -> int:
    work = prepare(module)
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "mutation")  # the alias plugin
    mutmut = Path(sys.executable).with_name("mutmut")
    cmd = [str(mutmut), "run", "--max-children", str(jobs), *MODULES[module]["names"]]
    print(f"== {module}: {' '.join(cmd[1:])}  (in {work.relative_to(ROOT)})", flush=True)
    return subprocess.call(cmd, cwd=work, env=env)


def scores(module: str) -> tuple[dict[str, int], list[str]]:
    from mutmut.stats import status_by_exit_code

    counts: dict[str, int] = {}
    survivors: list[str] = []
    spec = MODULES[module]
    for path in spec["mutate"]:
        meta = WORK / module / "mutants" / (path + ".meta")
        if not meta.exists():
            continue
        for key, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            if not any(fnmatch.fnmatch(key, pattern) for pattern in spec["names"]):
                continue
            if any(fnmatch.fnmatch(key, pattern) for pattern in spec.get("exclude", [])):
                continue
            status = status_by_exit_code[code]
            counts[status] = counts.get(status, 0) + 1
            if status in ("survived", "no tests"):
                survivors.append(key)
    return counts, survivors


def report(modules: list[str]) -> None:
    print(f"{'module':10} {'killed':>7} {'total':>6} {'score':>6}  other")
    for module in modules:
        counts, _ = scores(module)
        killed = counts.get("killed", 0) + counts.get("timeout", 0)
        total = killed + counts.get("survived", 0) + counts.get("no tests", 0)
        other = {k: v for k, v in counts.items() if k not in ("killed", "timeout")}
        score = f"{100 * killed / total:.1f}%" if total else "-"
        print(f"{module:10} {killed:>7} {total:>6} {score:>6}  {other}")


def show_survivors(module: str) -> None:
    _, survivors = scores(module)
    mutmut = Path(sys.executable).with_name("mutmut")
    for key in survivors:
        subprocess.call([str(mutmut), "show", key], cwd=WORK / module)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help=f"some of: {', '.join(MODULES)}")
    parser.add_argument("--report", action="store_true", help="print the last scores, run nothing")
    parser.add_argument("--survivors", action="store_true", help="show each surviving mutant's diff")
    parser.add_argument("--fresh", action="store_true", help="forget the last run's results first")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="mutants tested at once (default 2)")
    args = parser.parse_args()
    modules = args.modules or list(MODULES)
    unknown = [m for m in modules if m not in MODULES]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; known: {list(MODULES)}")
    if args.survivors:
        for module in modules:
            show_survivors(module)
        return 0
    if not args.report:
        for module in modules:
            if args.fresh:
                shutil.rmtree(WORK / module / "mutants", ignore_errors=True)
            run(module, args.jobs)
    report(modules)
    return 0


if __name__ == "__main__":
    sys.exit(main())
