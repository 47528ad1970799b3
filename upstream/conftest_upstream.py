"""Fixtures the huggingface_hub sdist's tests expect from their own `tests/conftest.py` (which the
sdist does not ship), pointed at the embedded server. `upstream/run.py` places this file as
`tests/conftest.py` of the unpacked sdist; it is not part of the console's own suite.

It rebinds the tests' constants (`testing_constants.ENDPOINT_STAGING`, `TOKEN`) to the server
`run.py` started, before any test module imports them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from huggingface_hub import HfApi

from . import testing_constants

testing_constants.ENDPOINT_STAGING = os.environ["UPSTREAM_ENDPOINT"]
testing_constants.TOKEN = os.environ["UPSTREAM_TOKEN"]

from .testing_utils import repo_name  # noqa: E402  (after the constants are rebound)

RepoFactory = Callable[..., Any]


@pytest.fixture(scope="session")
def api() -> HfApi:
    return HfApi(endpoint=testing_constants.ENDPOINT_STAGING, token=testing_constants.TOKEN)


@pytest.fixture(scope="session")
def api_prod() -> HfApi:
    pytest.skip("needs huggingface.co")


@pytest.fixture(scope="class")
def repo_factory(api: HfApi) -> Iterator[RepoFactory]:
    """create_repo(...) for the test; every repo it made is deleted afterwards."""
    made: list[tuple[str, str, Any]] = []

    def make(repo_type: str = "model", repo_id: str | None = None, token: Any = None, **kwargs: Any) -> Any:
        url = api.create_repo(repo_id or repo_name(), repo_type=repo_type, token=token, **kwargs)
        made.append((url.repo_id, repo_type, token))
        return url

    yield make
    for repo_id, repo_type, token in made:
        try:
            api.delete_repo(repo_id, repo_type=repo_type, token=token, missing_ok=True)
        except Exception:  # noqa: BLE001  (cleanup only)
            pass
