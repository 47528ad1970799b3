"""`console fleet apply` against a real embedded server: dry run, apply, no-op, change, remove."""

from __future__ import annotations

import shutil
import textwrap

import pytest

from console import jobspec, paths
from console.backend import connect
from console.cli import main
from console.config import Config, save

FLEET = """\
base_model = "tiny-random"
model_b = 1.0
flavor = "t4-small"
epochs = 3
schedule = "0 3 * * 1"
env = "prod"

[[tenant]]
id = "acme"
dataset = "data/acme.jsonl"
examples = 300
max_steps = 10

[[tenant]]
id = "globex"
dataset = "data/globex.jsonl"
examples = 250
schedule = "30 3 * * 1"
"""


@pytest.fixture
def server(tmp_path):
    """A `console serve`-like server the CLI finds through server.json (same data folder)."""
    cfg = Config(namespace="oncall")
    save(cfg)  # the CLI reads $CONSOLE_CONFIG
    b = connect(cfg)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def fleet_file(tmp_path):
    (tmp_path / "data").mkdir()
    for name in ("acme", "globex"):
        shutil.copy(paths.training_dir() / "data" / f"{name}.jsonl", tmp_path / "data")
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET)
    return path


def scheduled(server):
    out = {}
    for sj in server.api.list_scheduled_jobs(namespace=server.namespace):
        out[jobspec.labels_of(sj)["tenant"]] = sj
    return out


def apply(capsys, *args) -> tuple[int, str]:
    code = main(["fleet", "apply", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_dry_run_apply_noop_change_remove(server, fleet_file, capsys):
    code, out = apply(capsys, str(fleet_file), "--dry-run")
    assert code == 0
    assert "+ create  acme: 0 3 * * 1 on t4-small" in out
    assert "+ create  globex: 30 3 * * 1 on t4-small" in out
    assert "2 to create, 0 to change, 0 to remove" in out
    assert scheduled(server) == {}  # a dry run changes nothing

    code, out = apply(capsys, str(fleet_file))
    assert code == 0 and "Applied." in out
    have = scheduled(server)
    assert set(have) == {"acme", "globex"}
    acme = have["acme"]
    assert acme.schedule == "0 3 * * 1"
    assert acme.job_spec.flavor == "t4-small"
    labels = jobspec.labels_of(acme)
    assert labels["app"] == "console" and labels["env"] == "prod" and labels["kind"] == "sft"
    assert labels["examples"] == "300" and labels["model_b"] == "1" and labels["epochs"] == "3"
    request = jobspec.read_request(acme)
    assert request.max_steps == 10 and request.dataset == str(fleet_file.parent / "data/acme.jsonl")
    assert acme.job_spec.timeout == jobspec.estimate_timeout(request, 1.3)

    code, out = apply(capsys, str(fleet_file))
    assert code == 0 and "Nothing to do" in out and "0 to create, 0 to change, 0 to remove" in out
    assert {k: v.id for k, v in scheduled(server).items()} == {k: v.id for k, v in have.items()}

    # change: a schedule (in place) and a flavor (replaced); remove: a tenant left out
    text = FLEET.replace('schedule = "30 3 * * 1"', 'schedule = "0 6 * * 2"')
    text = text.replace(
        "examples = 300\nmax_steps = 10", 'examples = 300\nmax_steps = 10\nflavor = "l4x1"'
    )
    fleet_file.write_text(text)
    code, out = apply(capsys, str(fleet_file), "--dry-run")
    assert "~ change  acme" in out and "flavor 't4-small' -> 'l4x1'" in out
    assert "~ change  globex" in out and "schedule '30 3 * * 1' -> '0 6 * * 2'" in out
    assert "0 to create, 2 to change, 0 to remove" in out
    code, out = apply(capsys, str(fleet_file))
    assert code == 0
    now = scheduled(server)
    assert now["globex"].id == have["globex"].id and now["globex"].schedule == "0 6 * * 2"
    assert now["acme"].job_spec.flavor == "l4x1"
    code, out = apply(capsys, str(fleet_file))
    assert "Nothing to do" in out

    fleet_file.write_text(text.split('[[tenant]]\nid = "globex"')[0])
    code, out = apply(capsys, str(fleet_file), "--dry-run")
    assert f"- remove  globex ({now['globex'].id})" in out
    code, out = apply(capsys, str(fleet_file))
    assert set(scheduled(server)) == {"acme"}


def test_a_schedule_and_flavor_change_replaces_the_job_spec_too(server, fleet_file, capsys):
    assert apply(capsys, str(fleet_file))[0] == 0
    before = scheduled(server)["globex"]
    fleet_file.write_text(FLEET.replace('schedule = "30 3 * * 1"',
                                        'schedule = "0 6 * * 2"\nflavor = "l4x1"'))
    code, out = apply(capsys, str(fleet_file), "--dry-run")
    assert "~ change  globex" in out
    assert "schedule '30 3 * * 1' -> '0 6 * * 2'" in out and "flavor 't4-small' -> 'l4x1'" in out
    code, out = apply(capsys, str(fleet_file))
    assert code == 0 and f"replaced globex ({before.id} -> " in out
    after = scheduled(server)["globex"]
    assert after.schedule == "0 6 * * 2"
    assert after.job_spec.flavor == "l4x1"  # the new spec, not just the new cron
    request = jobspec.read_request(after)
    assert after.job_spec.timeout == jobspec.estimate_timeout(request, 1.3)
    assert jobspec.labels_of(after)["spec"] != jobspec.labels_of(before)["spec"]
    code, out = apply(capsys, str(fleet_file))
    assert "Nothing to do" in out  # nothing left to change


def test_duplicate_schedules_of_one_tenant_are_removed(server, fleet_file, capsys):
    api, ns = server.api, server.namespace
    assert apply(capsys, str(fleet_file))[0] == 0
    acme = scheduled(server)["acme"]
    spec = acme.job_spec
    twin = api.create_scheduled_job(  # the same schedule again, e.g. made by hand
        image=spec.docker_image, command=list(spec.command) + list(spec.arguments or []),
        env=dict(spec.environment or {}), flavor=spec.flavor, timeout=spec.timeout,
        labels=dict(spec.labels), schedule=acme.schedule, namespace=ns)

    def acme_ids() -> set[str]:
        return {sj.id for sj in api.list_scheduled_jobs(namespace=ns)
                if jobspec.labels_of(sj).get("tenant") == "acme"}

    assert acme_ids() == {acme.id, twin.id}
    code, out = apply(capsys, str(fleet_file), "--dry-run")
    assert "0 to create, 0 to change, 1 to remove" in out
    assert f"- remove  acme ({twin.id})" in out  # the server lists the older one first: kept
    code, out = apply(capsys, str(fleet_file))
    assert code == 0 and f"removed acme ({twin.id})" in out
    assert acme_ids() == {acme.id}  # one schedule for acme, as the file says
    assert set(scheduled(server)) == {"acme", "globex"}
    code, out = apply(capsys, str(fleet_file))
    assert "Nothing to do" in out


def test_an_invalid_file_is_refused_before_touching_anything(server, fleet_file, capsys):
    fleet_file.write_text(
        FLEET
        + textwrap.dedent("""
        [[tenant]]
        id = "acme"
        dataset = "data/acme.jsonl"
        examples = 1
        flavor = "nope"
    """)
    )
    code, out = apply(capsys, str(fleet_file))
    assert code == 2
    assert "2 problem(s)" in out and "duplicate tenant id 'acme'" in out and "unknown flavor" in out
    assert scheduled(server) == {}


def test_read_only_refuses_apply_but_not_the_dry_run(server, fleet_file, capsys):
    code, out = apply(capsys, str(fleet_file), "--read-only")
    assert code == 2 and "read-only" in out
    code, out = apply(capsys, str(fleet_file), "--dry-run", "--read-only")
    assert code == 0 and "2 to create" in out
    assert scheduled(server) == {}


def test_other_envs_and_other_apps_are_left_alone(server, fleet_file, capsys):
    api, ns = server.api, server.namespace
    api.create_scheduled_job(
        image="python:3.12",
        command=["python", "-c", "1"],
        schedule="@daily",
        labels={"app": "console", "tenant": "zed", "env": "dev", "kind": "sft"},
        namespace=ns,
    )
    api.create_scheduled_job(
        image="python:3.12",
        command=["python", "-c", "1"],
        schedule="@daily",
        labels={"team": "other"},
        namespace=ns,
    )
    code, out = apply(capsys, str(fleet_file))
    assert code == 0 and "0 to remove" in out and "- remove" not in out
    assert len(list(api.list_scheduled_jobs(namespace=ns))) == 4


def test_a_half_billion_parameter_fleet_applies_with_labels_hf_accepts(server, fleet_file, capsys):
    """The embedded server refuses a '.' in a label as HF does; a 0.5B model and 1.5 epochs go as
    0p5 and 1p5, read back as numbers, and a second apply plans nothing."""
    fleet_file.write_text(FLEET.replace("model_b = 1.0", "model_b = 0.5").replace("epochs = 3", "epochs = 1.5"))
    code, out = apply(capsys, str(fleet_file))
    assert code == 0 and "Applied." in out, out
    for sj in scheduled(server).values():
        labels = jobspec.labels_of(sj)
        assert labels["model_b"] == "0p5" and labels["epochs"] == "1p5"
        assert not any("." in k or "." in v for k, v in labels.items())
        request = jobspec.read_request(sj)
        assert (request.model_b, request.epochs) == (0.5, 1.5)
    code, out = apply(capsys, str(fleet_file))
    assert code == 0 and "Nothing to do" in out


@pytest.fixture
def strict_server(tmp_path):
    """A server answering as huggingface.co does (no readable timeout on scheduled specs, `suspend:
    null`), with faults armable, announced in server.json for the CLI to find."""
    from console.backend.server_info import forget_server_info, write_server_info
    from console.server import LocalServer, ServerOptions

    cfg = Config(namespace="oncall")
    save(cfg)
    srv = LocalServer(ServerOptions(namespace="oncall", strict=True, faults=True))
    srv.start()
    write_server_info(srv.url)
    b = connect(cfg)
    try:
        yield srv, b
    finally:
        b.close()
        forget_server_info(srv.url)
        srv.stop()


def test_apply_twice_plans_nothing_when_hf_echoes_no_timeout(strict_server, fleet_file, capsys):
    srv, server = strict_server
    assert apply(capsys, str(fleet_file))[0] == 0
    have = scheduled(server)
    assert {sj.job_spec.timeout for sj in have.values()} == {None}  # as HF's JobSpec reads it
    assert {sj.suspend for sj in have.values()} == {None}
    request = jobspec.read_request(have["acme"])
    assert request.timeout_seconds == jobspec.estimate_timeout(request, 1.3)  # kept in its label
    code, out = apply(capsys, str(fleet_file))
    assert code == 0 and "Nothing to do" in out and "0 to change" in out, out
    assert {k: v.id for k, v in scheduled(server).items()} == {k: v.id for k, v in have.items()}

    # a real timeout change still shows, from the label
    (fleet_file.parent / "config.toml").write_text('namespace = "oncall"\n[defaults]\ntimeout_buffer = 2.0\n')
    code, out = apply(capsys, "--config", str(fleet_file.parent / "config.toml"), str(fleet_file), "--dry-run")
    assert "~ change  acme" in out and "timeout " in out and "2 to change" in out, out


def test_a_change_creates_the_new_schedule_before_deleting_the_old(strict_server, fleet_file, capsys):
    from console.server.faults import Fault

    srv, server = strict_server
    assert apply(capsys, str(fleet_file))[0] == 0
    old = scheduled(server)["acme"]
    changed = FLEET.replace("examples = 300\nmax_steps = 10", 'examples = 300\nmax_steps = 10\nflavor = "l4x1"')
    fleet_file.write_text(changed)

    # the create fails: nothing was deleted, acme keeps its schedule
    srv.faults.add(Fault("status", path=r"^/api/scheduled-jobs/oncall$", method="POST", status=500))
    code, out = apply(capsys, str(fleet_file))
    assert code == 2 and "apply stopped" in out
    assert scheduled(server)["acme"].id == old.id
    acme = [sj for sj in server.api.list_scheduled_jobs(namespace=server.namespace)
            if jobspec.labels_of(sj).get("tenant") == "acme"]
    assert [sj.id for sj in acme] == [old.id]

    # the delete fails: the new schedule is in place, the old one too, until the next apply
    srv.faults.add(Fault("status", path=rf"/{old.id}$", method="DELETE", status=403))
    code, out = apply(capsys, str(fleet_file))
    assert code == 2 and f"the old one {old.id} could not be deleted" in out, out
    acme = [sj for sj in server.api.list_scheduled_jobs(namespace=server.namespace)
            if jobspec.labels_of(sj).get("tenant") == "acme"]
    assert len(acme) == 2 and {sj.job_spec.flavor for sj in acme} == {"t4-small", "l4x1"}
    new_id = next(sj.id for sj in acme if sj.job_spec.flavor == "l4x1")

    code, out = apply(capsys, str(fleet_file), "--dry-run")
    assert f"- remove  acme ({old.id})" in out and "0 to create, 0 to change, 1 to remove" in out, out
    assert apply(capsys, str(fleet_file))[0] == 0
    assert scheduled(server)["acme"].id == new_id
    assert "Nothing to do" in apply(capsys, str(fleet_file))[1]


def test_a_local_tenant_that_names_no_repo_pushes_to_its_own_in_the_users_namespace(server, fleet_file, capsys):
    code, out = apply(capsys, str(fleet_file))
    assert code == 0, out
    for tenant, sj in scheduled(server).items():
        request = jobspec.read_request(sj)
        assert request.hub_model_id == f"oncall/adapter-{tenant}"  # the local Hub, one repo per tenant
        assert sj.job_spec.environment.get("HF_HUB_OFFLINE") == "0"  # online, with the server's token
    code, out = apply(capsys, str(fleet_file))
    assert "Nothing to do" in out


def test_the_destination_defaults_to_the_config_then_the_local_hub():
    assert jobspec.default_destination("ops/lora-{tenant}", "local", "me") == "ops/lora-{tenant}"
    assert jobspec.default_destination(None, "local", "me") == "me/adapter-{tenant}"
    assert jobspec.default_destination(None, "hub", "me") is None  # on HF Jobs a run names its repo
