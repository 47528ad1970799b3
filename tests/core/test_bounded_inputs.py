"""Files a person names are read bounded: a device, a FIFO or a huge file given as a model config,
a fleet file or the config is refused at once in one line naming it (not read until memory runs
out, not waited on forever); and a count typed with a minus sign is refused even when it is -0."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def console(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _refused_fast(args: list[str], path: str, why: str) -> None:
    # refused before any read: a console that read the device or waited on the FIFO would hit the
    # timeout (a FIFO nobody writes to blocks forever, /dev/zero never ends)
    r = console(*args, timeout=60)
    assert r.returncode == 2, (r.stdout, r.stderr)
    [line] = r.stderr.strip().splitlines()
    assert path in line and why in line and "Traceback" not in line, line


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "config.json"
    os.mkfifo(path)
    return str(path)


def test_whatif_refuses_dev_zero_as_a_model_config_at_once():
    _refused_fast(["whatif", "--model-config", "/dev/zero"], "/dev/zero", "not a regular file (a device)")


def test_whatif_refuses_a_fifo_as_a_model_config_instead_of_waiting_on_it(fifo):
    _refused_fast(["whatif", "--model-config", fifo], fifo, "not a regular file (a FIFO)")


def test_whatif_refuses_a_model_config_larger_than_a_config_json_can_be(tmp_path):
    big = tmp_path / "config.json"
    with open(big, "wb") as out:
        out.truncate(64 * 1024 * 1024)  # sparse: 64 MiB of zeros that would all be read
    _refused_fast(["whatif", "--model-config", str(big)], str(big), "64 MiB, more than the 4 MiB allowed")


def test_a_fifo_as_the_fleet_file_or_the_config_is_refused_in_one_line(tmp_path):
    fleet = tmp_path / "fleet.toml"
    os.mkfifo(fleet)
    r = console("fleet", "apply", "--dry-run", str(fleet), timeout=20)
    assert r.returncode == 2 and f"{fleet}: 1 problem(s)" in r.stderr
    assert "cannot be read: not a regular file (a FIFO)" in r.stderr
    config = tmp_path / "config.toml"
    os.mkfifo(config)
    _refused_fast(["--config", str(config), "whatif"], str(config), "cannot be read: not a regular file (a FIFO)")


def test_a_model_config_that_is_a_plain_file_is_still_read(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text('{"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32, '
                   '"num_key_value_heads": 8, "intermediate_size": 8192, "vocab_size": 128256}')
    r = console("whatif", "--model-config", str(cfg))
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("typed", ["-0", "-1", "-00"])
def test_whatif_refuses_a_negative_tenant_count_even_minus_zero(typed):
    r = console("whatif", "--tenants", typed)
    assert r.returncode == 2, r.stdout
    assert r.stderr.strip() == f"console: tenants must be from 0 to 1e+06, got {typed}"


def test_whatif_still_takes_zero_and_plain_tenant_counts():
    for typed, shown in (("0", "0 tenant(s)"), ("+7", "7 tenant(s)"), ("100", "100 tenant(s)")):
        r = console("whatif", "--tenants", typed)
        assert r.returncode == 0 and shown in r.stdout, (typed, r.stderr)
    r = console("whatif", "--tenants", "ten")
    assert r.returncode == 2
    assert r.stderr.strip() == "console: tenants must be a whole number from 0 to 1e+06, got 'ten'"
