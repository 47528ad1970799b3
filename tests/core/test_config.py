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


def _cli(target: Path):
    env = {**os.environ, "CONSOLE_CONFIG": str(target)}
    env.pop("COLUMNS", None)
    return lambda *a, **extra: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "console", *a], capture_output=True, text=True, env={**env, **extra}
    )


_COMMENTED = """\
# my console settings
plan = "team"   # the company plan

# raised for the spring batch
seats = 4
colour = "green"

[defaults]
# cheap GPUs first
flavor = "t4-small"
"""


def test_config_set_keeps_comments_blank_lines_and_order(tmp_path):
    target = write(tmp_path / "config.toml", _COMMENTED)
    run = _cli(target)
    r = run("config", "set", "seats", "6")
    assert r.returncode == 0, r.stderr
    assert target.read_text() == _COMMENTED.replace("seats = 4", "seats = 6")
    r = run("config", "set", "defaults.env", "prod")
    assert r.returncode == 0, r.stderr
    assert target.read_text() == _COMMENTED.replace("seats = 4", "seats = 6") + 'env = "prod"\n'
    r = run("config", "set", "read_only", "true")
    assert r.returncode == 0, r.stderr
    text = target.read_text()
    assert text.startswith("# my console settings\n") and "# raised for the spring batch\n" in text
    # a new top-level key goes above the first table, where TOML needs it
    assert text.index("read_only = true") < text.index("[defaults]")
    assert cfgmod.load(target).read_only is True


def test_config_set_on_a_fresh_file_writes_only_that_key(tmp_path):
    target = tmp_path / "cfg" / "config.toml"
    r = _cli(target)("config", "set", "plan", "team")
    assert r.returncode == 0, r.stderr
    import tomllib

    assert tomllib.loads(target.read_text()) == {"plan": "team"}
    r = _cli(target)("config", "set", "notify.bell", "true")
    assert r.returncode == 0, r.stderr
    assert tomllib.loads(target.read_text()) == {"plan": "team", "notify": {"bell": True}}


def test_config_unset_removes_the_line_and_keeps_the_rest(tmp_path):
    target = write(tmp_path / "config.toml", _COMMENTED)
    r = _cli(target)("config", "unset", "seats")
    assert r.returncode == 0, r.stderr
    assert target.read_text() == _COMMENTED.replace("seats = 4\n", "")
    assert cfgmod.load(target).seats == 1


def test_a_refused_config_set_leaves_the_file_byte_identical(tmp_path):
    target = write(tmp_path / "config.toml", _COMMENTED)
    before = target.read_bytes()
    run = _cli(target)
    for key, value in (("seats", "-5"), ("plan", "gold"), ("defaults.flavor", "quantum-xl"),
                       ("colour", "red"), ("endpoint", "file:///etc"), ("keys.quit", "a b")):
        r = run("config", "set", key, value)
        assert r.returncode == 2 and key in r.stderr and r.stderr.count("\n") == 1, (key, r.stderr)
        assert target.read_bytes() == before, key
    r = run("config", "set", "seats", "6")  # and an accepted one changes only its line
    assert r.returncode == 0, r.stderr
    assert target.read_bytes() == before.replace(b"seats = 4", b"seats = 6")


def test_config_keys_prints_aligned_columns(tmp_path):
    r = _cli(tmp_path / "config.toml")("config", "keys", COLUMNS="100")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    rows = [line for line in lines if not line.startswith(" ")]
    keys = [row.split()[0] for row in rows]
    assert "defaults.timeout_overhead_s" in keys and "keys.<id>" in keys
    assert keys == [k for k, _, _ in cfgmod.describe_keys()]
    # every default starts in one column, every description in another
    default_col = {len(row) - len(row[len(k):].lstrip()) for row, k in zip(rows, keys, strict=True)}
    assert len(default_col) == 1, default_col
    descs = [row for row in rows if "Seats on the plan" in row or "Hardware flavor" in row]
    assert len({row.index(word) for row, word in zip(descs, ("Seats", "Hardware"), strict=True)}) == 1
    doc_col = descs[0].index("Seats") if "Seats" in descs[0] else descs[0].index("Hardware")
    wrapped = [line for line in lines if line.startswith(" ")]
    assert wrapped and all(len(line) - len(line.lstrip()) == doc_col for line in wrapped)


def test_config_init_writes_only_the_keys_given(tmp_path):
    target = tmp_path / "config.toml"
    r = _cli(target)("config", "init", "--plan", "team")
    assert r.returncode == 0, r.stderr
    import tomllib

    assert tomllib.loads(target.read_text()) == {"plan": "team"}
    assert "console config keys" in target.read_text()  # where the rest are described


def test_config_keys_fits_a_narrow_terminal_and_pipes_one_line_per_key(tmp_path):
    run = _cli(tmp_path / "config.toml")
    narrow = run("config", "keys", COLUMNS="60").stdout.splitlines()
    assert all(len(line) <= 60 for line in narrow), max(narrow, key=len)
    assert any(line.startswith("    The HF user or org") for line in narrow)  # the meaning below its row
    piped = run("config", "keys").stdout.splitlines()
    assert [line.split()[0] for line in piped] == [k for k, _, _ in cfgmod.describe_keys()]


def test_the_configuration_page_table_is_the_schema():
    """The manual's configuration page lists every key of the config, its default and meaning, as the
    schema declares them."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert cfgmod.markdown_table() in page
