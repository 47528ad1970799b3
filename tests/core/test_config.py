"""The local TOML config: defaults, clear one-line errors, unknown keys kept, atomic saves."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from console import config as cfgmod
from console.config import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_missing_file_means_defaults(tmp_path):
    cfg = cfgmod.load(tmp_path / "nope.toml")
    assert cfg.plan == "pro"
    assert cfg.backend == "local"
    assert cfg.defaults.timeout_buffer == 1.3
    assert not (tmp_path / "nope.toml").exists()


def test_env_var_overrides_default_path(tmp_path, monkeypatch):
    p = write(tmp_path / "elsewhere.toml", 'plan = "team"\nseats = 4\n')
    monkeypatch.setenv("CONSOLE_CONFIG", str(p))
    cfg = cfgmod.load()
    assert (cfg.plan, cfg.seats, cfg.path) == ("team", 4, p)


def test_all_keys_read(tmp_path):
    p = write(
        tmp_path / "c.toml",
        """
        namespace = "acme-org"
        plan = "enterprise"
        seats = 3
        backend = "hub"
        endpoint = "http://127.0.0.1:9999/"
        monthly_budget_usd = 250
        [defaults]
        flavor = "a10g-small"
        timeout_buffer = 1.25
        env = "prod"
        [trackio]
        project = "tenants"
        space_id = "acme-org/trackio"
        """,
    )
    cfg = cfgmod.load(p)
    assert cfg.namespace == "acme-org" and cfg.plan == "enterprise" and cfg.seats == 3
    assert cfg.backend == "hub" and cfg.endpoint == "http://127.0.0.1:9999"
    assert cfg.monthly_budget_usd == 250.0
    assert (cfg.defaults.flavor, cfg.defaults.timeout_buffer, cfg.defaults.env) == ("a10g-small", 1.25, "prod")
    assert (cfg.trackio.project, cfg.trackio.space_id) == ("tenants", "acme-org/trackio")


def test_malformed_toml_names_file_line_and_column(tmp_path):
    p = write(tmp_path / "c.toml", 'plan = "team"\nseats = = 3\n')
    before = p.read_bytes()
    with pytest.raises(ConfigError) as err:
        cfgmod.load(p)
    msg = str(err.value)
    assert str(p) in msg and "line 2" in msg and "column" in msg
    assert "\n" not in msg
    assert p.read_bytes() == before


@pytest.mark.parametrize(
    "text, key, expected",
    [
        ('seats = "three"', "seats", "whole number"),
        ("seats = 0", "seats", "whole number"),
        ("seats = 99999999999999999", "seats", "whole number"),
        ('plan = "gold"', "plan", "free | pro | team | enterprise"),
        ('backend = "cloud"', "backend", "local | hub"),
        ("monthly_budget_usd = -5", "monthly_budget_usd", "number"),
        ("monthly_budget_usd = nan", "monthly_budget_usd", "number"),
        ("[defaults]\ntimeout_buffer = 0.5", "defaults.timeout_buffer", "1 to 5"),
        ('[defaults]\nflavor = "quantum-xl"', "defaults.flavor", "known flavor"),
        ('endpoint = "ftp://x"', "endpoint", "URL"),
        ("read_only = 1", "read_only", "true or false"),
        ('defaults = "x"', "defaults", "table"),
        ('[trackio]\nspace_id = "nospace"', "trackio.space_id", "Space id"),
        ('[defaults]\nenv = "prod.eu"', "defaults.env", "HF refuses '.'"),
    ],
)
def test_wrong_values_name_the_key_and_what_is_expected(tmp_path, text, key, expected):
    p = write(tmp_path / "c.toml", text + "\n")
    with pytest.raises(ConfigError) as err:
        cfgmod.load(p)
    msg = str(err.value)
    assert str(p) in msg and f"'{key}'" in msg and expected in msg
    assert "\n" not in msg


def test_duplicate_keys_are_refused(tmp_path):
    p = write(tmp_path / "c.toml", 'plan = "pro"\nplan = "team"\n')
    with pytest.raises(ConfigError, match="line 2"):
        cfgmod.load(p)


def test_a_token_in_the_config_is_refused(tmp_path):
    p = write(tmp_path / "c.toml", '[server]\nhf_token = "hf_abc"\n')
    with pytest.raises(ConfigError) as err:
        cfgmod.load(p)
    assert "hf_abc" not in str(err.value)
    assert "credentials" in str(err.value)


def test_unknown_keys_survive_a_save(tmp_path):
    p = write(
        tmp_path / "c.toml",
        """
        plan = "team"
        colour = "green"
        [defaults]
        flavor = "l4x1"
        favourite = 7
        [plugins.slack]
        channel = "#oncall"
        """,
    )
    cfg = cfgmod.load(p)
    cfgmod.set_value(cfg, "seats", "6")
    cfgmod.save(cfg)
    again = cfgmod.load(p)
    assert again.seats == 6 and again.plan == "team"
    import tomllib

    doc = tomllib.loads(p.read_text())
    assert doc["colour"] == "green"
    assert doc["defaults"]["favourite"] == 7
    assert doc["plugins"]["slack"]["channel"] == "#oncall"


def test_save_is_atomic_a_crash_mid_save_leaves_the_old_file(tmp_path):
    p = write(tmp_path / "c.toml", 'plan = "team"\nseats = 2\n')
    before = p.read_bytes()
    # A child process starts a save and is killed while writing the temp file.
    code = textwrap.dedent(
        f"""
        import os, signal
        from console import config as c
        real_fsync = os.fsync
        def dying_fsync(fd):
            os.kill(os.getpid(), signal.SIGKILL)
        os.fsync = dying_fsync
        cfg = c.load({str(p)!r})
        c.set_value(cfg, "seats", "9")
        c.save(cfg)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert proc.returncode == -9
    assert p.read_bytes() == before
    assert cfgmod.load(p).seats == 2


def test_save_writes_a_file_only_the_user_can_read(tmp_path):
    cfg = cfgmod.Config(path=tmp_path / "sub" / "c.toml")
    path = cfgmod.save(cfg)
    assert (os.stat(path).st_mode & 0o777) == 0o600
    assert cfgmod.load(path) == cfg


def test_bad_set_value_changes_nothing(tmp_path):
    p = write(tmp_path / "c.toml", 'plan = "team"\n')
    cfg = cfgmod.load(p)
    with pytest.raises(ConfigError):
        cfgmod.set_value(cfg, "plan", "gold")
    with pytest.raises(ConfigError, match="unknown key"):
        cfgmod.set_value(cfg, "colour", "red")
    assert cfg.plan == "team"
    assert p.read_text() == 'plan = "team"\n'


def test_cli_config_init_and_errors(tmp_path):
    target = tmp_path / "cfg" / "config.toml"
    env = {**os.environ, "CONSOLE_CONFIG": str(target)}
    run = lambda *a: subprocess.run([sys.executable, "-m", "console", *a], capture_output=True, text=True, env=env)  # noqa: E731
    r = run("config", "init", "--plan", "team")
    assert r.returncode == 0 and target.exists()
    assert cfgmod.load(target).plan == "team"
    r = run("config", "init")
    assert r.returncode == 2 and "already exists" in r.stderr
    r = run("config", "set", "plan", "gold")
    assert r.returncode == 2 and "plan" in r.stderr and str(target) in r.stderr
    assert cfgmod.load(target).plan == "team"
    target.write_text("seats = [1\n")
    r = run("whatif")
    assert r.returncode == 2 and str(target) in r.stderr and "line 1" in r.stderr
    assert r.stderr.count("\n") == 1
