"""One definition per fact: the job stages that run, that are over, and every stage are written
once (`console.stages`); a copy of one of those sets anywhere else in the package, as a Python
literal or in SQL, fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from console import stages

SRC = Path(__file__).resolve().parents[2] / "src" / "console"
SETS = {frozenset(stages.ACTIVE_STAGES): "ACTIVE_STAGES", frozenset(stages.TERMINAL_STAGES): "TERMINAL_STAGES",
        frozenset(stages.ALL_STAGES): "ALL_STAGES"}
SQL_IN = re.compile(r"\bIN\s*\(([^()]*)\)", re.IGNORECASE)


def copies_in(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(items) == len(node.elts) and (name := SETS.get(frozenset(items))):
                found.append((node.lineno, name))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for match in SQL_IN.finditer(node.value):
                items = re.findall(r"'([A-Z]+)'", match.group(1))
                if name := SETS.get(frozenset(items)):
                    found.append((node.lineno, f"{name} in SQL"))
    return found


def test_no_module_writes_out_a_stage_set_of_its_own():
    copies = {
        f"{path.relative_to(SRC)}:{line}": name
        for path in sorted(SRC.rglob("*.py")) if path.name != "stages.py"
        for line, name in copies_in(path.read_text(encoding="utf-8"))
    }
    assert not copies, f"stage sets written out again (use console.stages): {copies}"


def test_the_check_finds_a_copy_in_python_and_in_sql():
    assert copies_in('if stage in ("RUNNING", "SCHEDULING"): pass') == [(1, "ACTIVE_STAGES")]
    assert copies_in("q = \"SELECT 1 WHERE stage IN ('SCHEDULING', 'RUNNING')\"") == [(1, "ACTIVE_STAGES in SQL")]
    every = 's = ["SCHEDULING", "RUNNING", "COMPLETED", "CANCELED", "ERROR", "DELETED"]'
    assert copies_in(every) == [(1, "ALL_STAGES")]
    assert copies_in('if stage in ("ERROR", "CANCELED"): pass') == []  # another set: the failed ones
