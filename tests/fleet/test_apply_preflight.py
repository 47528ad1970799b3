"""`console fleet apply` checks the data before it schedules runs on it, against a real embedded
server: a local dataset file the validator fails refuses its tenant before anything is sent; every
dataset gets a CPU preflight job once per change of its content (remembered in the data folder),
and a tenant whose last preflight failed is flagged in `fleet show`."""

from __future__ import annotations

import json
import shutil

import pytest

from console import jobspec, paths
from console.backend import connect
from console.cli import main
from console.config import Config, save

FLEET = """\
base_model = "tiny-random"
model_b = 1.0
flavor = "t4-small"
epochs = 1
schedule = "0 3 * * 1"
env = "prod"

[[tenant]]
id = "acme"
dataset = "data/acme.jsonl"
examples = 300
max_steps = 10

[[tenant]]
id = "globex"
dataset = "{globex}"
examples = 250
"""

ASKS_ONLY = {"messages": [{"role": "user", "content": "where is my order?"}]}  # no answer to learn
ANSWERED = {"messages": [{"role": "user", "content": "where is my order?"},
                         {"role": "assistant", "content": "on its way"}]}


@pytest.fixture
def server(tmp_path):
    cfg = Config(namespace="oncall")
    save(cfg)
    b = connect(cfg)
    try:
        yield b
    finally:
        b.close()


def fleet_file(tmp_path, globex: str):
    (tmp_path / "data").mkdir(exist_ok=True)
    shutil.copy(paths.training_dir() / "data" / "acme.jsonl", tmp_path / "data")
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET.format(globex=globex))
    return path


def cli(capsys, *args) -> tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def preflight_jobs(server) -> list:
    jobs = server.api.list_jobs(namespace=server.namespace)
    return [j for j in jobs if jobspec.labels_of(j).get("kind") == "validate"]


def upload_rows(server, repo: str, row: dict, n: int = 12) -> None:
    rows = "".join(json.dumps({**row, "id": i}) + "\n" for i in range(n))
    server.api.upload_file(path_or_fileobj=rows.encode(), path_in_repo="train.jsonl", repo_id=repo,
                           repo_type="dataset")  # fmt: skip


def flags(capsys) -> dict[str, list[str]]:
    code, out = cli(capsys, "fleet", "show", "--json")
    assert code == 0, out
    return {r["tenant"]: r["flags"] for r in json.loads(out)}


def suspended(server) -> dict[str, bool]:
    return {jobspec.labels_of(sj)["tenant"]: bool(sj.suspend)
            for sj in server.api.list_scheduled_jobs(namespace=server.namespace)}


def test_a_failed_preflight_suspends_its_tenants_schedule_until_a_preflight_passes(server, tmp_path, capsys):
    repo = f"{server.namespace}/globex-chats"
    server.api.create_repo(repo, repo_type="dataset")
    upload_rows(server, repo, ASKS_ONLY)
    path = fleet_file(tmp_path, repo)

    code, out = cli(capsys, "fleet", "apply", str(path))
    assert code == 1, out
    assert "preflight acme: PASS" in out and "preflight globex: FAILED (ERROR)" in out, out
    assert "invalid_rows: 12 of 12 rows do not fit sft" in out  # why, from the preflight's verdict
    assert "Applied." in out and "Preflight failed for globex: their schedules are suspended" in out
    assert len(preflight_jobs(server)) == 2
    assert suspended(server) == {"acme": False, "globex": True}  # no GPU minute for data known bad
    assert flags(capsys) == {"acme": [], "globex": ["suspended", "preflight"]}
    code, shown = cli(capsys, "fleet", "show")
    assert "preflight failed (job " in shown and "invalid_rows: 12 of 12" in shown, shown
    assert "suspended until a preflight passes" in shown
    stored = json.loads((paths.data_dir() / "preflight.json").read_text())
    assert sorted(v["passed"] for v in stored.values()) == [False, True]

    # nothing changed: no job is run again, the stored outcome is said again, it stays suspended
    code, out = cli(capsys, "fleet", "apply", str(path))
    assert code == 1 and "Nothing to do" in out, out
    assert "preflight acme: PASS, dataset unchanged since its preflight" in out
    assert len(preflight_jobs(server)) == 2
    code, out = cli(capsys, "fleet", "apply", "--dry-run", str(path))
    assert "Nothing to do" in out, out  # the dry run holds it too
    assert suspended(server) == {"acme": False, "globex": True}

    # the dataset is fixed (a new commit of the repo): only it is checked again; the schedule resumes
    upload_rows(server, repo, ANSWERED)
    code, out = cli(capsys, "fleet", "apply", str(path))
    assert code == 0, out
    assert "preflight globex: PASS, dataset preflight" in out
    assert "suspend True -> False" in out
    assert len(preflight_jobs(server)) == 3
    assert suspended(server) == {"acme": False, "globex": False}
    assert flags(capsys) == {"acme": [], "globex": []}


def test_a_local_dataset_the_validator_fails_refuses_its_tenant_before_anything_is_sent(server, tmp_path, capsys):
    path = fleet_file(tmp_path, "data/globex.jsonl")
    (tmp_path / "data" / "globex.jsonl").write_text("".join(json.dumps(ASKS_ONLY) + "\n" for _ in range(12)))
    code, out = cli(capsys, "fleet", "apply", str(path))
    assert code != 0
    assert "nothing applied, 1 tenant(s) refused" in out, out
    assert f"tenant 'globex': dataset {tmp_path / 'data' / 'globex.jsonl'} fails the dataset check for sft: " in out
    assert "invalid_rows: 12 of 12 rows do not fit sft (no_assistant=12)" in out
    assert list(server.api.list_scheduled_jobs(namespace=server.namespace)) == []
    assert preflight_jobs(server) == []
