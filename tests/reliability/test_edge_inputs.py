"""Inputs at the edges, each met with a clear answer: a fleet of 50,000 tenants checked in linear
time, `config set endpoint` refusing bad URLs without echoing a password, `whatif
--calibrated --ledger` on a missing file, bidirectional overrides and 8-bit C1 controls in job
output, NaN and negative training knobs in a fleet file, and a symlinked config."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
from huggingface_hub._jobs_api import JobInfo
from rich.cells import cell_len
from tests.reliability.test_hostile_text import UNSAFE, screen_text
from tests.ui.canned import CannedApi, CannedBackend, job
from tests.ui.conftest import wait_for
from textual.geometry import Region

from console import cli, paths
from console import config as config_mod
from console.config import Config
from console.fleet import file as fleet_file
from console.fleet.file import FleetFileError, TenantSpec, load_fleet_file, parse_fleet
from console.jobs import clean_log_line
from console.ui.app import ConsoleApp

BIDI = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- fleet apply: duplicate tenants in linear time ---------------------------------------------


class _CountedId(str):
    """A tenant id that counts its comparisons: a check that scans the tenants seen so far for
    each tenant compares ids quadratically often; one that looks them up hashes them."""

    comparisons = 0

    def __eq__(self, other: object) -> bool:
        _CountedId.comparisons += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        _CountedId.comparisons += 1
        return str.__ne__(self, other)

    __hash__ = str.__hash__


def test_a_fleet_of_50k_tenants_is_checked_in_linear_time(monkeypatch):
    """The per-tenant checks (dataset, GPU fit) are stubbed: what is counted is the bookkeeping
    across tenants, which was quadratic (16k tenants 10 s, 100k 14 minutes): the ids are compared
    a few times per tenant, not once per pair of tenants."""

    def tenant(raw, defaults, where, base, prices, backend_kind, *, builder=False):
        return TenantSpec(id=raw["id"], dataset=raw["dataset"], examples=1, base_model="m",
                          model_b=1.0, flavor="t4-small", epochs=1.0, schedule="0 3 * * 1"), []

    monkeypatch.setattr(fleet_file, "_tenant", tenant)
    n = 50_000
    doc = {"tenant": [{"id": _CountedId(f"t{i}"), "dataset": f"d{i}"} for i in range(n)]}
    _CountedId.comparisons = 0
    fleet = parse_fleet(doc, Path("fleet.toml"))
    assert len(fleet.tenants) == n
    doc["tenant"].append({"id": _CountedId("t77"), "dataset": "d-other"})
    with pytest.raises(FleetFileError) as info:
        parse_fleet(doc, Path("fleet.toml"))
    assert info.value.problems == [f"duplicate tenant id 't77' (tenants #78 and #{n + 1})"]
    assert _CountedId.comparisons <= 10 * n, _CountedId.comparisons  # a pairwise scan: over 10^9


# -- fleet files: NaN and negative training knobs ------------------------------------------------


@pytest.mark.parametrize("line,needle", [
    ("learning_rate = nan", "learning_rate"),
    ("learning_rate = inf", "learning_rate"),
    ("learning_rate = -0.001", "learning_rate"),
    ("learning_rate = 0", "learning_rate"),
    ("lora_r = -1", "lora_r"),
    ("lora_r = 0", "lora_r"),
    ("lora_alpha = -16", "lora_alpha"),
])
def test_a_fleet_file_refuses_nan_and_negative_training_knobs(tmp_path, line, needle):
    (tmp_path / "data").mkdir()
    shutil.copy(paths.training_dir() / "data" / "acme.jsonl", tmp_path / "data")
    path = tmp_path / "fleet.toml"
    path.write_text(
        'base_model = "tiny-random"\nmodel_b = 1.0\nflavor = "t4-small"\nepochs = 3\n'
        f'schedule = "0 3 * * 1"\n\n[[tenant]]\nid = "acme"\ndataset = "data/acme.jsonl"\n'
        f"examples = 300\n{line}\n"
    )
    with pytest.raises(FleetFileError) as info:
        load_fleet_file(path)
    assert any(needle in p and "acme" in p for p in info.value.problems), info.value.problems


# -- config set endpoint -------------------------------------------------------------------------


@pytest.mark.parametrize("value,reason", [
    ("http://127.0.0.1:65536", "port"),
    ("http://127.0.0.1:0", "port"),
    ("http://127.0.0.1:99999999999", "port"),
    ("http://127.0.0.1:80a", "port"),
    ("http://127.0.0.1:8000\n", "newlines"),
    ("http://127.0.0.1:8000\r\n", "newlines"),
    ("http://127.0.0.1 :8000", "spaces"),
    ("http://bob:hunter2@127.0.0.1:8000", "user:password@"),
    ("https://hf_secrettoken@huggingface.co", "user:password@"),
    ("http://:8000", "host"),
])
def test_config_set_endpoint_refuses_bad_urls_and_never_echoes_a_password(capsys, value, reason):
    config_mod.save(Config(namespace="oncall"))
    path = Path(os.environ["CONSOLE_CONFIG"])
    before = path.read_bytes()
    code, out, err = _run(capsys, "config", "set", "endpoint", value)
    assert code == 2, (out, err)
    assert err.startswith("console: ") and len(err.strip().splitlines()) == 1
    assert reason in err
    assert "hunter2" not in err + out and "hf_secrettoken" not in err + out
    assert path.read_bytes() == before


def test_a_config_file_with_a_password_in_the_endpoint_is_refused_without_showing_it(capsys):
    path = Path(os.environ["CONSOLE_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('endpoint = "http://bob:hunter2@127.0.0.1:8000"\n')
    code, out, err = _run(capsys, "config", "show")
    assert code == 2 and "user:password@" in err and "hunter2" not in err + out


def test_a_good_endpoint_is_still_accepted(capsys):
    code, _, err = _run(capsys, "config", "set", "endpoint", "http://127.0.0.1:8765/")
    assert code == 0, err
    assert config_mod.load().endpoint == "http://127.0.0.1:8765"


# -- config set on a symlinked config -----------------------------------------------------------


def test_config_set_writes_through_a_symlinked_config(capsys, tmp_path):
    path = Path(os.environ["CONSOLE_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    real = tmp_path / "dotfiles" / "console.toml"
    real.parent.mkdir()
    real.write_text('namespace = "oncall"\n')
    path.unlink(missing_ok=True)
    path.symlink_to(real)
    code, _, err = _run(capsys, "config", "set", "seats", "7")
    assert code == 0, err
    assert path.is_symlink() and path.resolve() == real.resolve()  # the link is kept
    assert "seats = 7" in real.read_text()  # and the file it points at was written
    assert config_mod.load().seats == 7
    assert not list(path.parent.glob(".*.tmp")) and not list(real.parent.glob(".*.tmp"))


# -- whatif --calibrated --ledger on a missing file ----------------------------------------------


def test_whatif_calibrated_with_a_missing_ledger_says_so_and_creates_nothing(capsys, tmp_path):
    missing = tmp_path / "nowhere" / "ledger.sqlite3"
    code, out, err = _run(capsys, "whatif", "--calibrated", "--ledger", str(missing))
    assert code == 2, (out, err)
    assert "no such ledger file" in err and str(missing) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not missing.exists() and not missing.parent.exists()


# -- bidirectional overrides and 8-bit C1 controls in job output ---------------------------------

EVIL = ("\u202eexe.txt\u202c \u2067rtl\u2069 \x9b31m \x9d0;pwned-title\x07 "
        "\x9d52;c;ZXZpbA==\x9c \x90+q544e\x9c end")


def test_bidi_overrides_and_c1_controls_clean_to_inert_text():
    clean = clean_log_line(EVIL)
    assert not BIDI.search(clean) and not UNSAFE.search(clean)
    assert "pwned" not in clean and "ZXZpbA" not in clean and "544e" not in clean
    assert clean.startswith("\ufffdexe.txt\ufffd \ufffdrtl\ufffd") and clean.endswith("end")


async def test_bidi_and_c1_text_from_jobs_is_inert_on_screen_and_keeps_borders():
    canned = job("6b10a1f0c3d2e1f0aa11b1d1", "acme", "RUNNING", 3, 2.8, message="failed: " + EVIL)
    data = canned.__dict__.copy()
    hostile = JobInfo(
        id=canned.id, createdAt="2026-12-02T09:57:00.000Z", dockerImage="x", command=["x"],
        arguments=[], environment={}, secrets={}, flavor="t4-small",
        labels={**canned.labels, "tenant": "acme\u202eevil", "run": EVIL},
        status={"stage": "RUNNING", "message": data["status"].message}, owner=canned.owner.__dict__,
        startedAt="2026-12-02T09:57:06.000Z", endpoint="http://127.0.0.1:8765",
    )

    class HostileApi(CannedApi):
        def list_jobs(self, *, namespace=None, **_):
            return [hostile]

        def list_scheduled_jobs(self, *, namespace=None, **_):
            return []

        def fetch_job_logs(self, *, job_id, namespace=None, follow=False, tail=None, **_):
            return [EVIL, "plain line"]

        def inspect_job(self, *, job_id, namespace=None, **_):
            return hostile

    app = ConsoleApp(Config(namespace="oncall"), CannedBackend(HostileApi()),
                     refresh_seconds=30, stream_metrics=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: hostile.id in app.jobs_table.rows_by_id, what="the row")
        app.jobs_table.select_job(hostile.id)
        await wait_for(pilot, lambda: app.log_pane.ended, what="the log")
        await pilot.pause()  # the log's layout handled
        painted = screen_text(app)
        assert not BIDI.search(painted) and not UNSAFE.search(painted)
        assert "pwned" not in painted and "ZXZpbA" not in painted
        assert "\ufffdexe.txt\ufffd" in painted  # shown, as a visible mark, not obeyed
        # borders stay put: every painted row of the jobs table is exactly as wide as the table
        table = app.jobs_table
        strips = table.render_lines(Region(0, 0, table.size.width, table.size.height))
        assert {cell_len(strip.text) for strip in strips} == {table.size.width}
        assert app.is_running
