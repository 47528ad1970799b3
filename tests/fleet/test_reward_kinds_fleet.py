"""A fleet with a GRPO tenant and a reward-model tenant, end to end on the embedded server: the
fleet file names each kind (and the GRPO tenant's rewards, its own module among them, shipped
beside its data), `fleet apply` schedules them, each triggered run trains for real on the CPU,
ends `VERDICT: PASS` and pushes its every_save checkpoints and its adapter to the tenant's own
repo of the local Hub, where the adapter versions read its reward or held-out accuracy back.
"""

from __future__ import annotations

import shutil
import time

import pytest

from console import adapters, jobspec, paths
from console.backend import connect
from console.cli import main
from console.config import Config, save
from console.fleet import FleetFileError, load_fleet_file

FLEET = """\
base_model = "tiny-random"
model_b = 1.0
flavor = "t4-small"
epochs = 1
schedule = "0 3 * * 1"
env = "prod"

[[tenant]]
id = "massive"
kind = "grpo"
rewards = ["numeric", "format", "massive_rewards.py"]
dataset = "data/massive.jsonl"
examples = 96
max_steps = 10
learning_rate = 5e-2
lora_r = 8

[[tenant]]
id = "cyberdyne"
kind = "reward"
dataset = "data/cyberdyne.jsonl"
examples = 160
max_steps = 10
learning_rate = 5e-3
lora_r = 8
"""


@pytest.fixture
def fleet_file(tmp_path):
    (tmp_path / "data").mkdir()
    for name in ("massive.jsonl", "massive_rewards.py", "cyberdyne.jsonl"):
        shutil.copy(paths.training_dir() / "data" / name, tmp_path / "data")
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET)
    return path


def test_a_grpo_and_a_reward_tenant_apply_train_pass_and_push(tmp_path, fleet_file, capsys):
    cfg = Config(namespace="oncall")
    save(cfg)  # the CLI reads $CONSOLE_CONFIG
    server = connect(cfg)
    try:
        code = main(["fleet", "apply", str(fleet_file)])
        assert code == 0, capsys.readouterr()
        scheduled = {jobspec.labels_of(sj)["tenant"]: sj
                     for sj in server.api.list_scheduled_jobs(namespace=server.namespace)}
        assert {t: jobspec.labels_of(sj)["kind"] for t, sj in scheduled.items()} == {
            "massive": "grpo", "cyberdyne": "reward"}
        grpo = jobspec.read_request(scheduled["massive"])
        assert grpo.rewards == "numeric,format,massive_rewards.py"
        assert jobspec.script_args_of(jobspec.command_of(scheduled["massive"]))[:2] == [
            "--rewards", "numeric,format,massive_rewards.py"]

        jobs = {t: server.api.trigger_scheduled_job(scheduled_job_id=sj.id, namespace=server.namespace)
                for t, sj in scheduled.items()}
        deadline = time.monotonic() + 280
        for tenant, job in jobs.items():
            while (stage := server.api.inspect_job(job_id=job.id, namespace=server.namespace).status.stage) in (
                    "SCHEDULING", "RUNNING"):
                assert time.monotonic() < deadline, f"{tenant}'s run did not end"
                time.sleep(0.5)
            logs = list(server.api.fetch_job_logs(job_id=job.id, namespace=server.namespace))
            verdict = [line for line in logs if line.startswith("VERDICT:")]
            assert stage == "COMPLETED" and verdict, "\n".join(logs[-40:])
            assert verdict[-1].startswith("VERDICT: PASS "), verdict[-1]
            repo = f"oncall/adapter-{tenant}"
            assert f"adapter=hf://{repo}" in verdict[-1]
            metric = "reward" if tenant == "massive" else "accuracy"
            assert f" metric={metric} " in verdict[-1]

            branch = f"runs/{tenant}-{job.id}"
            titles = [c.title for c in server.api.list_repo_commits(repo, revision=branch)]
            assert sum("final adapter" in t for t in titles) == 1, titles
            assert len(titles) >= 4, titles  # checkpoints at each tenth of the run, the final, the start
            versions = adapters.list_versions(server.api, repo)
            newest = versions.versions[0]
            assert newest.verdict == "PASS" and newest.metric == metric and newest.metric_last is not None
    finally:
        server.close()


def test_rewards_are_checked_in_the_fleet_file(fleet_file):
    text = fleet_file.read_text()
    for edit, problem in [
        (('"format", "massive_rewards.py"', '"format", "maybe"'),
         "tenant 'massive': rewards reward 'maybe' must be one of exact, numeric, format or a Python module"),
        (('"massive_rewards.py"', '"other.py"'), "tenant 'massive': reward module other.py is not beside the dataset"),
        (('kind = "reward"', 'kind = "reward"\nrewards = ["exact"]'), "tenant 'cyberdyne': rewards are for kind"),
    ]:
        fleet_file.write_text(text.replace(edit[0], edit[1], 1))
        with pytest.raises(FleetFileError) as err:
            load_fleet_file(fleet_file)
        assert any(p.startswith(problem) for p in err.value.problems), err.value.problems
