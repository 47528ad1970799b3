"""A tenant trains only on its own data, whatever path a submission takes: the fleet file refuses
two tenants on one dataset, and `fleet apply` refuses a tenant whose dataset another tenant's
schedule trains on, changing nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.cli import main
from console.config import Config, save
from console.fleet import FleetFileError, PlanRefused, load_fleet_file, plan_apply
from console.jobspec import SubmissionError, build_submission
from console.ship import ship

HEADER = (
    'env = "dev"\nbase_model = "tiny-random"\nmodel_b = 0.5\nflavor = "t4-small"\nepochs = 1\n'
    'schedule = "@weekly"\n'
)


def _tenant(tid: str, dataset: str) -> str:
    return f'[[tenant]]\nid = "{tid}"\ndataset = "{dataset}"\nexamples = 100\n'


def _write(tmp_path: Path, *tenants: str) -> Path:
    for name in ("acme", "globex"):
        (tmp_path / f"{name}.jsonl").write_text('{"prompt": "a", "completion": "b"}\n')
    path = tmp_path / "fleet.toml"
    path.write_text(HEADER + "".join(tenants))
    return path


def test_a_fleet_file_with_two_tenants_on_one_dataset_is_refused(tmp_path):
    path = _write(tmp_path, _tenant("acme", "globex.jsonl"), _tenant("globex", "globex.jsonl"))
    with pytest.raises(FleetFileError) as caught:
        load_fleet_file(path)
    assert any("tenants 'acme' and 'globex' both train on" in p and "its own data" in p for p in caught.value.problems)


def test_apply_refuses_a_dataset_another_tenants_schedule_trains_on_and_changes_nothing(tmp_path, capsys):
    from console.backend import connect

    globex_only = _write(tmp_path, _tenant("globex", "globex.jsonl"))
    save(Config(namespace="acme-org"))
    with connect(Config(namespace="acme-org")) as backend:
        scheduled = list(backend.api.list_scheduled_jobs(namespace=backend.namespace))
        plan = plan_apply(load_fleet_file(globex_only), scheduled)
        for action in plan.actions:
            sub = action.submission
            sub = ship(backend.api, sub, backend.namespace)
            backend.api.create_scheduled_job(**sub.scheduled_kwargs(action.schedule), namespace=backend.namespace)
        before = [sj.id for sj in backend.api.list_scheduled_jobs(namespace=backend.namespace)]
        assert len(before) == 1

        # a second file, for another env, gives acme globex's data
        stolen = tmp_path / "other.toml"
        stolen.write_text(HEADER.replace('"dev"', '"prod"') + _tenant("acme", str(tmp_path / "globex.jsonl")))
        with pytest.raises(PlanRefused) as refused:
            plan_apply(load_fleet_file(stolen), backend.api.list_scheduled_jobs(namespace=backend.namespace))
        assert refused.value.problems == [
            f"tenant 'acme': dataset {tmp_path / 'globex.jsonl'} is tenant globex's: acme trains only on its own data"
        ]
        code = main(["fleet", "apply", str(stolen)])
        assert code == 2
        err = capsys.readouterr().err
        assert "nothing applied, 1 tenant(s) refused" in err and "is tenant globex's" in err
        assert [sj.id for sj in backend.api.list_scheduled_jobs(namespace=backend.namespace)] == before


def test_the_headless_submission_path_refuses_it_too(tmp_path):
    fleet = load_fleet_file(_write(tmp_path, _tenant("acme", "acme.jsonl"), _tenant("globex", "globex.jsonl")))
    from console.jobspec import dataset_owners

    owners = dataset_owners(t.request(fleet.env) for t in fleet.tenants)
    acme = fleet.tenants[0].request(fleet.env)
    from dataclasses import replace

    with pytest.raises(SubmissionError, match="is tenant globex's"):
        build_submission(replace(acme, dataset=str(tmp_path / "globex.jsonl")), backend_kind="local", owners=owners)
