"""A tenant's live-tag policy in the fleet file: `promote = "on_pass"` makes each passing run move
its repo's live tag (the recipes' --promote on_pass); manual (the default) passes nothing, so
existing fleets keep their schedules' fingerprints. A bad value or a policy without a repo is
refused with the field named."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from console import jobspec, paths
from console.fleet.apply import desired_submission
from console.fleet.file import FleetFileError, parse_fleet

BASE = {
    "base_model": "tiny-random", "model_b": 0.5, "flavor": "l4x1", "epochs": 1, "examples": 100,
    "schedule": "@daily",
}  # fmt: skip


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    shutil.copy(paths.training_dir() / "data" / "acme.jsonl", tmp_path / "data")
    return tmp_path


def _fleet(folder: Path, **tenant):
    doc = {**BASE, "tenant": [{"id": "acme", "dataset": "data/acme.jsonl", **tenant}]}
    return parse_fleet(doc, folder / "fleet.toml")


def _args(folder: Path, **tenant) -> list[str]:
    f = _fleet(folder, **tenant)
    sub = desired_submission(f.tenants[0], f, backend_kind="local", timeout_buffer=1.3, token="tok")
    return jobspec.script_args_of(sub.command)


def test_on_pass_reaches_the_run_and_reads_back(folder):
    args = _args(folder, hub_model_id="ops/adapter-{tenant}", promote="on_pass")
    assert args[args.index("--promote") + 1] == "on_pass"
    f = _fleet(folder, hub_model_id="ops/adapter-{tenant}", promote="on_pass")
    sub = desired_submission(f.tenants[0], f, backend_kind="local", timeout_buffer=1.3, token="tok")
    listed = type("SJ", (), {"labels": sub.labels, "command": sub.command, "arguments": []})()
    assert jobspec.read_request(listed).promote == "on_pass"


@pytest.mark.parametrize("policy", [None, "manual"])
def test_manual_passes_nothing(folder, policy):
    extra = {"promote": policy} if policy else {}
    assert "--promote" not in _args(folder, hub_model_id="ops/adapter-{tenant}", **extra)


def test_a_bad_policy_or_one_without_a_repo_is_refused_naming_the_field(folder):
    with pytest.raises(FleetFileError) as bad:
        _fleet(folder, hub_model_id="ops/adapter-{tenant}", promote="always")
    assert any("promote 'always' must be one of manual, on_pass, on_eval" in p for p in bad.value.problems)
    with pytest.raises(FleetFileError) as norepo:
        _fleet(folder, promote="on_pass")
    assert any("promote is for a tenant with a hub_model_id" in p for p in norepo.value.problems)


def test_on_eval_and_its_margin_reach_the_run_and_read_back(folder):
    f = _fleet(folder, hub_model_id="ops/adapter-{tenant}", promote="on_eval", promote_margin=0.05)
    assert f.tenants[0].promote == "on_eval" and f.tenants[0].promote_margin == 0.05
    sub = desired_submission(f.tenants[0], f, backend_kind="local", timeout_buffer=1.3, token="tok")
    args = jobspec.script_args_of(sub.command)
    assert args[args.index("--promote") + 1] == "on_eval"
    listed = type("SJ", (), {"labels": sub.labels, "command": sub.command, "arguments": []})()
    back = jobspec.read_request(listed)
    assert back.promote == "on_eval" and back.promote_margin == 0.05


def test_a_bad_margin_or_one_without_on_eval_is_refused_naming_the_field(folder):
    with pytest.raises(FleetFileError) as bad:
        _fleet(folder, hub_model_id="ops/adapter-{tenant}", promote="on_eval", promote_margin=1.5)
    assert any("promote_margin" in p and "below 1" in p for p in bad.value.problems)
    with pytest.raises(FleetFileError) as not_eval:
        _fleet(folder, hub_model_id="ops/adapter-{tenant}", promote="on_pass", promote_margin=0.02)
    assert any("promote_margin is for promote = \"on_eval\"" in p for p in not_eval.value.problems)
