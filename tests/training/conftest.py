"""Fixtures for the training-script tests (helpers live in training_helpers.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the test modules import training_helpers

from training_helpers import EMBED, SFT, TRAINING, ForkServer, hub_env, load_module  # noqa: E402


@pytest.fixture(scope="session")
def sft_module() -> ModuleType:
    return load_module(SFT, "sft_lora_under_test")


@pytest.fixture(scope="session")
def embed_module() -> ModuleType:
    return load_module(EMBED, "sentence_transformer_under_test")


@pytest.fixture(scope="session")
def validator() -> ModuleType:
    """`validate_dataset.py`, imported the way the recipes import it (one module for both)."""
    if str(TRAINING) not in sys.path:
        sys.path.insert(0, str(TRAINING))
    import validate_dataset

    return validate_dataset


@pytest.fixture(scope="session")
def run_rules() -> ModuleType:
    """`jobkit.run`, imported the way the scripts import it (from the training folder)."""
    if str(TRAINING) not in sys.path:
        sys.path.insert(0, str(TRAINING))
    import jobkit.run

    return jobkit.run


@pytest.fixture
def any_row_count(validator, monkeypatch) -> None:
    """Datasets of a row or two pass the validator: for tests of row checks, not of the dataset's
    minimum size (`validate_dataset.MIN_ROWS`, tested on its own)."""
    monkeypatch.setattr(validator, "MIN_ROWS", 1)


@pytest.fixture
def hub():
    """An embedded server (namespace `ops`) whose Hub the runs push to."""
    from console.server import LocalServer, ServerOptions

    srv = LocalServer(ServerOptions(namespace="ops", port=0))
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def hub_forks(hub, tmp_path):
    """A fork server for runs pushing to `hub` in `hub_env(tmp_path, hub)`: its imports read that
    environment's Hub endpoint and HF_HOME, as each run's own would."""
    with ForkServer(hub_env(tmp_path, hub)) as forks:
        yield forks
