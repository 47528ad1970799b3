"""Fixtures for the training-script tests (helpers live in training_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the test modules import training_helpers

from training_helpers import SFT, VALIDATE, load_module  # noqa: E402


@pytest.fixture(scope="session")
def sft_module() -> ModuleType:
    return load_module(SFT, "sft_lora_under_test")


@pytest.fixture(scope="session")
def validator() -> ModuleType:
    return load_module(VALIDATE, "validate_dataset_under_test")
