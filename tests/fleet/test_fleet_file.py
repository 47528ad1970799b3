"""Fleet file validation: a file that conflicts with itself is refused with every reason at once."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from console import paths
from console.fleet import FleetFileError, load_fleet_file

DATA = paths.training_dir() / "data"


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "data").mkdir(exist_ok=True)
    for name in ("acme", "globex"):
        (tmp_path / "data" / f"{name}.jsonl").write_text((DATA / f"{name}.jsonl").read_text())
    path = tmp_path / "fleet.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_the_example_fleet_is_valid():
    fleet = load_fleet_file(paths.training_dir() / "fleet.example.toml")
    assert [t.id for t in fleet.tenants] == ["acme", "globex", "initech", "umbrella", "wayne"]
    assert fleet.env == "demo"
    acme = fleet.tenant("acme")
    assert acme.schedule == "0 3 * * 1" and acme.flavor == "t4-small" and acme.max_steps == 120
    # every name in it is a Hub repo (of the local Hub, where `console demo` puts them)
    assert acme.dataset == "console/acme" and acme.base_model == "console/tiny-causal-lm"
    assert fleet.hub_model_id == "console/adapter-{tenant}"
    assert fleet.tenant("initech").flavor == "a10g-small"  # per-tenant override
    assert fleet.tenant("umbrella").model_b == 3.0


def test_every_conflict_is_reported(tmp_path):
    path = write(
        tmp_path,
        """\
        base_model = "tiny-random"
        model_b = 1.0
        flavor = "t4-small"
        epochs = 3
        schedule = "0 3 * * 1"

        [[tenant]]
        id = "acme"
        dataset = "data/acme.jsonl"
        examples = 100

        [[tenant]]
        id = "acme"
        dataset = "data/globex.jsonl"
        examples = 100

        [[tenant]]
        id = "globex"
        dataset = "data/globex.jsonl"
        examples = 100
        schedule = "every tuesday"

        [[tenant]]
        id = "hooli"
        dataset = "data/missing.jsonl"
        examples = 100
        flavor = "h100-mega"

        [[tenant]]
        id = "big"
        dataset = "data/acme.jsonl"
        examples = 100
        model_b = 13
    """,
    )
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(path)
    problems = "\n".join(err.value.problems)
    assert "duplicate tenant id 'acme'" in problems
    assert "tenant 'globex': schedule" in problems and "5 fields" in problems
    assert "unknown flavor 'h100-mega'" in problems
    assert "missing.jsonl does not exist" in problems
    assert "13B model does not fit t4-small" in problems
    assert len(err.value.problems) == 5


@pytest.mark.parametrize(
    "body, expected",
    [
        ('[[tenant]]\nid = "a"\ndataset = "data/acme.jsonl"\n', "examples is required"),
        ('[[tenant]]\nid = "a b"\ndataset = "data/acme.jsonl"\nexamples = 1\n', "must be letters"),
        ('[[tenant]]\nid = "acme.eu"\ndataset = "data/acme.jsonl"\nexamples = 1\n',
         "id 'acme.eu' must be letters, digits, '-' and '_' (at most 63; HF refuses '.'"),
        ('env = "prod.eu"\n[[tenant]]\nid = "a"\ndataset = "data/acme.jsonl"\nexamples = 1\n',
         "env 'prod.eu' must be letters"),
        ('[[tenant]]\nid = "a"\ndataset = "data/acme.jsonl"\nexamples = "ten"\n', "whole number"),
        (
            '[[tenant]]\nid = "a"\ndataset = "data/acme.jsonl"\nexamples = 1\ncolour = 1\n',
            "unknown key 'colour'",
        ),
        (
            '[[tenant]]\nid = "a"\ndataset = "data/acme.jsonl"\nexamples = 1\n'
            'flavor = "cpu-basic"\n',
            "CPU flavor",
        ),
        (
            '[[tenant]]\nid = "a"\ndataset = "data/acme.jsonl"\nexamples = 1\n'
            'schedule = "0 3 * * 9"\n',
            "not a valid cron",
        ),
        ("tenant = 3\n", "[[tenant]] tables"),
        ("x = [\n", "not valid TOML"),
    ],
)
def test_single_problems(tmp_path, body, expected):
    head = (
        'base_model = "tiny-random"\nmodel_b = 1\nflavor = "t4-small"\nepochs = 1\n'
        'schedule = "weekly"\n'
    )
    path = write(tmp_path, head + body)
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(path)
    assert expected in str(err.value)


def test_local_datasets_are_refused_for_the_hub_backend(tmp_path):
    path = write(
        tmp_path,
        """\
        base_model = "org/model"
        model_b = 1
        flavor = "t4-small"
        epochs = 1
        schedule = "weekly"
        [[tenant]]
        id = "acme"
        dataset = "data/acme.jsonl"
        examples = 10
        [[tenant]]
        id = "globex"
        dataset = "org/globex-chats"
        examples = 10
    """,
    )
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(path, backend_kind="hub")
    assert err.value.problems == [
        "tenant 'acme': dataset 'data/acme.jsonl' is a local file; HF Jobs cannot read local "
        "files (push it as a Hub dataset and use its id)"
    ]
    fleet = load_fleet_file(path)  # locally both are fine
    assert fleet.tenant("globex").dataset == "org/globex-chats"


@pytest.mark.parametrize(
    "line, expected",
    [
        ("trackio_project = 5", "trackio_project must be a string, got 5"),
        ("description = ['x']", "description must be a string, got ['x']"),
        ('epochs = "two"', "epochs must be a number, got 'two'"),
        ("retry = 11", "retry must be a whole number from 0 to 10, got 11"),
    ],
)
def test_a_top_level_value_of_the_wrong_type_is_named_once(tmp_path, line, expected):
    """A top-level key holding the wrong type is refused by name, once, even where every tenant
    sets its own value (a project number the fleet would silently log nowhere with)."""
    path = write(tmp_path, line + "\n" + textwrap.dedent("""
        [[tenant]]
        id = "acme"
        dataset = "data/acme.jsonl"
        examples = 10
        base_model = "tiny-random"
        model_b = 0.5
        flavor = "t4-small"
        epochs = 1
        schedule = "weekly"
        """))
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(path)
    assert err.value.problems == [expected]
