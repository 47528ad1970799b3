"""The wheel carries what the console needs at run time: the stylesheet and the training scripts."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from console import paths

REPO = Path(__file__).resolve().parents[2]


def test_installed_package_finds_its_stylesheet_and_training_scripts():
    assert paths.stylesheet_path().is_file()
    assert (paths.training_dir() / "sft_lora.py").is_file()
    assert (paths.training_dir() / "validate_dataset.py").is_file()
    assert (paths.training_dir() / "jobkit" / "__init__.py").is_file()


def test_wheel_contains_stylesheet_and_training(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    wheel = next(tmp_path.glob("console-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "console/screens.tcss" in names
    assert "console/training/sft_lora.py" in names
    assert "console/training/validate_dataset.py" in names
    # the package the scripts import from their own folder
    assert {f"console/training/jobkit/{m}.py" for m in ("__init__", "run", "recipe")} <= names
    assert any(n.startswith("console/training/data/") and n.endswith(".jsonl") for n in names)
    assert "console/cli.py" in names
    entry = [n for n in names if n.endswith("entry_points.txt")]
    assert entry and "console = console.cli:main" in zipfile.ZipFile(wheel).read(entry[0]).decode()


def test_every_package_the_console_imports_is_declared():
    """A package imported anywhere in `src/console` is a dependency of the project (or of the
    extra that the importing command needs), not something another package happens to bring."""
    import ast
    import re
    import sys
    import tomllib
    from importlib.metadata import packages_distributions

    root = Path(__file__).resolve().parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"]) + [d for ds in project["optional-dependencies"].values() for d in ds]

    def canon(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    declared = {canon(re.split(r"[<>=!;\[ ~]", spec, maxsplit=1)[0]) for spec in wanted}
    dists = packages_distributions()
    imported: dict[str, str] = {}
    for path in (root / "src" / "console").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top != "console" and top not in sys.stdlib_module_names:
                    imported.setdefault(top, str(path.relative_to(root)))
    missing = {
        top: where for top, where in imported.items()
        if not {canon(d) for d in dists.get(top, [top])} & declared
    }
    assert not missing, f"imported but not declared: {missing}"


def test_every_source_path_the_docs_name_exists():
    """A file or folder of the project named in the README, the docs or the reliability and test
    notes is there: a rename that leaves a page pointing nowhere fails here."""
    import re

    root = Path(__file__).resolve().parents[2]
    pages = [root / "README.md", root / "RELIABILITY.md", root / "TESTING.md", root / "BENCHMARKS.md",
             *sorted((root / "docs").rglob("*.md")), *sorted((root / "training").glob("*.md"))]
    named = re.compile(r"`((?:src/console|training|tests|benchmarks)/[A-Za-z0-9_./-]+?)(?:::[^`]*)?`")
    missing = sorted({(page.name, m) for page in pages if page.exists()
                      for m in named.findall(page.read_text(encoding="utf-8"))
                      if "*" not in m and not (root / m).exists()})
    assert not missing, missing
