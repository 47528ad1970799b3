"""Run huggingface_hub's own live Hub tests (from its sdist) against the embedded server.

    .venv/bin/python upstream/run.py                      # the default test files
    .venv/bin/python upstream/run.py tests/test_buckets.py -k tree   # any pytest arguments

The sdist matching the installed huggingface_hub is downloaded once (pip, from PyPI) into
$UPSTREAM_CACHE (default /tmp/console-upstream), with pytest-mock beside it (their tests use
`mocker`). A server is started in a fresh temporary data folder with the tests' user
(`testing_constants.USER`) as its namespace; `conftest_upstream.py` points the tests at it.
Not collected by the console's own pytest run (testpaths = tests).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import huggingface_hub

HERE = Path(__file__).resolve().parent
DEFAULT_TESTS = [
    "tests/test_buckets.py",
    "tests/test_buckets_cli.py",
    "tests/test_buckets_hf_file_system.py",
    "tests/test_bucket_live_follow.py",
    "tests/test_hf_api.py",
    "tests/test_file_download.py",
    "tests/test_snapshot_download.py",
    "tests/test_commit_api.py",
    "tests/test_hf_file_system.py",
    "tests/test_copy_files.py",
    "tests/test_xet_upload.py",
    "tests/test_upload_pipeline.py",
    "tests/test_cli.py",
]
"""Every test file of the sdist that calls a server (the others test the client alone)."""
TEST_TIMEOUT_S = int(os.environ.get("UPSTREAM_TEST_TIMEOUT", "900"))
"""pytest-timeout's limit per test: a large-file test on a busy machine takes minutes."""
USER = "__DUMMY_HUB_USER__"  # testing_constants.USER in the sdist


def prepare(cache: Path) -> Path:
    """The unpacked sdist (with our conftest in its tests/) and the extra test dependencies."""
    version = huggingface_hub.__version__
    src = cache / f"huggingface_hub-{version}"
    archive = cache / f"huggingface_hub-{version}.tar.gz"
    if not archive.exists():
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        f"huggingface_hub=={version}", "-d", str(cache)], check=True)
    if not src.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(cache, filter="data")
    (src / "tests" / "__init__.py").touch()
    shutil.copy(HERE / "conftest_upstream.py", src / "tests" / "conftest.py")
    deps = cache / "pydeps"
    if not (deps / "pytest_mock").exists():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(deps),
                        "pytest-mock"], check=True)
    return src


def main(argv: list[str]) -> int:
    cache = Path(os.environ.get("UPSTREAM_CACHE", "/tmp/console-upstream"))
    cache.mkdir(parents=True, exist_ok=True)
    src = prepare(cache)
    home = Path(tempfile.mkdtemp(prefix="console-upstream-home-"))
    os.environ.update(
        HOME=str(home), CONSOLE_DATA_DIR=str(home / "data"), CONSOLE_CONFIG=str(home / "config.toml"),
        HF_HOME=str(home / "hf"), XDG_CONFIG_HOME=str(home / ".config"), HF_HUB_DISABLE_TELEMETRY="1",
    )
    os.environ.pop("HF_TOKEN", None)
    os.environ.pop("CONSOLE_SERVER_TOKEN", None)
    from console.server import LocalServer, ServerOptions

    server = LocalServer(ServerOptions(namespace=USER, port=0, max_running_jobs=2))
    server.start()
    try:
        env = dict(os.environ, UPSTREAM_ENDPOINT=server.url, UPSTREAM_TOKEN=server.token, HF_ENDPOINT=server.url,
                   HF_HUB_DISABLE_UPDATE_CHECK="1", HF_HUB_DISABLE_PROGRESS_BARS="1", NO_COLOR="1", COLUMNS="200",
                   PYTHONPATH=os.pathsep.join(filter(None, [str(cache / "pydeps"), os.environ.get("PYTHONPATH")])))
        cmd = [sys.executable, "-m", "pytest", "-o", "addopts=", "-p", "no:cacheprovider", "-q", "-rfE",
               "--timeout", str(TEST_TIMEOUT_S), "-m", "not production and not git_lfs", *(argv or DEFAULT_TESTS)]
        return subprocess.run(cmd, cwd=src, env=env).returncode
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
