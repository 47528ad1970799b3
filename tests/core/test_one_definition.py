"""One definition per fact: the job stages (`console.stages`), a job's default and longest timeout
(`console.prices.HF_DEFAULT_TIMEOUT_SECONDS`, `HF_MAX_TIMEOUT_SECONDS`) and HF's label rule
(`console.labels`) are written once; a literal copy anywhere else in the package (a Python string, a
stage inside SQL, a timeout's number, the label pattern or its length in a message) fails here.
Docstrings and comments may name a stage: they explain, they decide nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import console
from console import labels, stages
from console.prices import HF_DEFAULT_TIMEOUT_SECONDS, HF_MAX_TIMEOUT_SECONDS

SRC = Path(console.__file__).resolve().parent  # the package under test (a planted copy: mutation/planted.py)


def _modules() -> list[Path]:
    """The console's modules: not the training scripts an installed package carries in console/training."""
    return [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] != "training"]
STAGE_NAMES = frozenset(stages.ALL_STAGES)
QUOTED_STAGE = re.compile(r"'(" + "|".join(sorted(STAGE_NAMES)) + r")'")
"""A stage as an SQL string literal, inside a longer string."""
SETS = {frozenset(stages.ACTIVE_STAGES): "ACTIVE_STAGES", frozenset(stages.TERMINAL_STAGES): "TERMINAL_STAGES",
        frozenset(stages.ALL_STAGES): "ALL_STAGES"}

STAGE_WORD_ALLOWED = {
    "stages.py": "the definition",
    "levels.py": "the alert level ERROR: the same word, another fact",
}
TIMEOUT_ALLOWED = {
    # (file, a name in the same statement): another fact that is also thirty minutes
    ("prices.py", "HF_DEFAULT_TIMEOUT_SECONDS"): "the definition",
    ("config/schema.py", "SCHEDULING_AFTER_S"): "how long a job may wait in SCHEDULING before the on-call warns",
    ("promotion.py", "EVALUATION_TIMEOUT_S"): "an evaluation job's own limit",
}
LABEL_ALLOWED = {
    "labels.py": "the definition",
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            for st in node.body:
                if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) and isinstance(st.value.value, str):
                    out.add(id(st.value))
    return out


def _strings(tree: ast.AST):
    docs = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node


def copies_in(source: str) -> list[tuple[int, str]]:
    """Where `source` writes a stage out: a whole set of them (named), one stage as a string, or a
    stage quoted inside a string (SQL)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(items) == len(node.elts) and (name := SETS.get(frozenset(items))):
                found.append((node.lineno, name))
    for node in _strings(tree):
        if node.value in STAGE_NAMES:
            found.append((node.lineno, node.value))
        else:
            found.extend((node.lineno, f"{m} in SQL") for m in QUOTED_STAGE.findall(node.value))
    return sorted(found)


def _value(node: ast.expr) -> object:
    """A number written with constants only (`1800`, `30 * 60`), else None."""
    try:
        return eval(compile(ast.Expression(node), "<number>", "eval"), {"__builtins__": {}})
    except Exception:
        return None


def timeout_copies_in(source: str, value: float = HF_DEFAULT_TIMEOUT_SECONDS) -> list[tuple[int, str]]:
    """Numbers (`1800`, `30 * 60`) equal to `value`, HF's default timeout unless named: (line, the
    statement)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    found = []
    for node in ast.walk(tree):
        arith = isinstance(node, ast.BinOp) and all(
            isinstance(n, ast.Constant | ast.BinOp | ast.operator) for n in ast.walk(node) if n is not node
            and not isinstance(n, ast.expr_context))
        if (isinstance(node, ast.Constant) and type(node.value) in (int, float)) or arith:
            if _value(node) == value:
                found.append((node.lineno, lines[node.lineno - 1].strip()))
    return sorted(set(found))


_LENGTHS = f"(?:{labels.NAME_MAX}|{labels.LABEL_MAX})"
LABEL_COPY = re.compile(
    r"\[(?:A-Za-z0-9_-|a-zA-Z0-9_-|\\w-)\]\{[01]," + _LENGTHS + r"\}"
    + r"|label.*\bat most " + _LENGTHS + r"\b|\bat most " + _LENGTHS + r"\b.*label",
    re.IGNORECASE,
)


def label_copies_in(source: str) -> list[tuple[int, str]]:
    """HF's label rule written out again: its pattern with its length, or a message about a label
    that states the length itself."""
    return [(n.lineno, n.value) for n in _strings(ast.parse(source)) if LABEL_COPY.search(n.value)]


def _sources(allowed: dict[str, str]) -> dict[str, str]:
    return {str(path.relative_to(SRC)): path.read_text(encoding="utf-8")
            for path in _modules() if str(path.relative_to(SRC)) not in allowed}


def test_no_module_writes_out_a_stage_of_its_own():
    copies = {f"{rel}:{line}": what for rel, text in _sources(STAGE_WORD_ALLOWED).items()
              for line, what in copies_in(text)}
    assert not copies, f"stages written out again (read console.stages; SQL: stages.sql_list or `?`): {copies}"


def test_no_module_writes_out_the_default_timeout():
    copies = {}
    for path in _modules():
        rel = str(path.relative_to(SRC))
        for line, statement in timeout_copies_in(path.read_text(encoding="utf-8")):
            if not any(rel == f and name in statement for f, name in TIMEOUT_ALLOWED):
                copies[f"{rel}:{line}"] = statement
    assert not copies, f"HF's default timeout written out again (read prices.HF_DEFAULT_TIMEOUT_SECONDS): {copies}"


def test_no_module_writes_out_the_longest_timeout():
    copies = {f"{rel}:{line}": statement for path in _modules() if (rel := str(path.relative_to(SRC))) != "prices.py"
              for line, statement in timeout_copies_in(path.read_text(encoding="utf-8"), HF_MAX_TIMEOUT_SECONDS)}
    assert not copies, f"the longest timeout written out again (read prices.HF_MAX_TIMEOUT_SECONDS): {copies}"


def test_no_module_writes_out_the_label_rule():
    copies = {f"{rel}:{line}": text for rel, source in _sources(LABEL_ALLOWED).items()
              for line, text in label_copies_in(source)}
    assert not copies, f"HF's label rule written out again (read console.labels): {copies}"


@pytest.mark.parametrize("allowed", [STAGE_WORD_ALLOWED, LABEL_ALLOWED], ids=["stages", "labels"])
def test_every_allowed_file_still_needs_its_place(allowed):
    """An entry of an allow-list names a file that exists and still holds what it is allowed: once
    the file is gone or clean, the entry goes too (the list stays short)."""
    check = copies_in if allowed is STAGE_WORD_ALLOWED else label_copies_in
    stale = [rel for rel, why in allowed.items() if why != "the definition"
             and not ((SRC / rel).exists() and check((SRC / rel).read_text(encoding="utf-8")))]
    assert not stale, f"allow-list entries with nothing left to allow (drop them): {stale}"


def test_the_checks_find_a_copy_in_python_and_in_sql():
    assert copies_in('if stage in ("RUNNING", "SCHEDULING"): pass') == [(1, "ACTIVE_STAGES"), (1, "RUNNING"),
                                                                      (1, "SCHEDULING")]
    assert copies_in('if stage != "SCHEDULING": pass') == [(1, "SCHEDULING")]
    assert copies_in("q = \"SELECT 1 WHERE stage IN ('SCHEDULING', 'RUNNING')\"") == [
        (1, "RUNNING in SQL"), (1, "SCHEDULING in SQL")]
    assert copies_in("q = f\"UPDATE jobs SET x = 1 WHERE stage = 'RUNNING' AND id = {i}\"") == [(1, "RUNNING in SQL")]
    assert copies_in("def f():\n    \"\"\"SCHEDULING -> RUNNING: 'RUNNING' here is prose.\"\"\"\n") == []
    assert copies_in("if stage == RUNNING: pass  # 'RUNNING'") == []
    assert copies_in('level = "WARN"') == []


def test_the_checks_find_the_timeout_and_the_label_rule():
    assert timeout_copies_in("timeout = spec.get('timeoutSeconds') or 1800") == [
        (1, "timeout = spec.get('timeoutSeconds') or 1800")]
    assert timeout_copies_in("LIMIT = 30 * 60") == [(1, "LIMIT = 30 * 60")]
    assert timeout_copies_in("n = 1801\nm = 60 * 60") == []
    assert timeout_copies_in("MAX = 7 * 86400  # a week", HF_MAX_TIMEOUT_SECONDS) == [(1, "MAX = 7 * 86400  # a week")]
    assert label_copies_in('r = re.compile(r"[A-Za-z0-9_-]{1,100}")') == [(1, "[A-Za-z0-9_-]{1,100}")]
    assert label_copies_in('raise TypeError("a label value (at most 63 characters)")') != []
    assert label_copies_in('r = re.compile(r"[A-Za-z0-9_-]{1,64}")') == []  # a resource group id: another rule
    assert label_copies_in('m = "page size (at most 100)"') == []


def test_the_stages_are_the_jobs_apis():
    """The one definition is HF's: every stage huggingface_hub knows, no other; a job waiting for a
    machine (SCHEDULING) is as active as a running one (its record still changes, its slot is held)."""
    from huggingface_hub import JobStage

    assert set(stages.ALL_STAGES) == {stage.value for stage in JobStage}
    assert set(stages.ACTIVE_STAGES) == {JobStage.SCHEDULING.value, JobStage.RUNNING.value}
    assert set(stages.TERMINAL_STAGES) == set(stages.ALL_STAGES) - set(stages.ACTIVE_STAGES)


def test_no_module_passes_on_a_name_it_imports():
    """A name is imported from the module that defines it: no module re-imports another's names
    only to hand them on (an unused import kept with `noqa: F401`), so a reader finds each
    definition where its import says it is. The one unused import checks that asyncssh is there."""
    kept = sorted(f"{p.relative_to(SRC)}:{n}" for p in _modules()
                  for n, line in enumerate(p.read_text().splitlines(), 1) if "noqa: F401" in line)
    assert [k.split(":")[0] for k in kept] == ["server/access/gateway.py"], kept
