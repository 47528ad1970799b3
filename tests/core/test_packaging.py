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
