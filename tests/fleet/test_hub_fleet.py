"""A fleet on the hub backend (`backend = "hub"`, huggingface_hub's own login), pointed at the
embedded server in strict mode (it answers as huggingface.co does): every run has somewhere to
push — its own `hub_model_id`, the fleet file's `org/adapter-{tenant}`, or the config's
`defaults.hub_model_id` — and logs to the Trackio Space (`[trackio] space_id`, or the fleet
file's), and a fleet with nowhere to push is refused before any request."""

from __future__ import annotations

import dataclasses
import textwrap

import pytest
from msgspec.structs import replace

from console import jobspec
from console.backend import connect
from console.backend.server_info import forget_server_info, write_server_info
from console.cli import main
from console.config import Config, ConfigError, load, save
from console.fleet import FleetFileError, load_fleet_file
from console.server import LocalServer, ServerOptions

NS = "oncall"
FLEET = """\
base_model = "Qwen/Qwen3-0.6B"
model_b = 0.6
flavor = "t4-small"
epochs = 1
schedule = "0 3 * * 1"
env = "prod"
{top}
[[tenant]]
id = "acme"
dataset = "ops/acme-chats"
examples = 300
{acme}
[[tenant]]
id = "globex"
dataset = "ops/globex-updates"
examples = 250
"""


@pytest.fixture
def hub(monkeypatch):
    """A strict server, the CLI's config on the hub backend pointed at it, logged in with HF_TOKEN."""
    srv = LocalServer(ServerOptions(namespace=NS, strict=True, models=("Qwen/Qwen3-0.6B",)))
    srv.start()
    write_server_info(srv.url)
    monkeypatch.setenv("HF_TOKEN", srv.token)
    cfg = Config(namespace=NS, backend="hub", endpoint=srv.url)
    save(cfg)
    backend = connect(cfg)
    try:
        yield cfg, backend
    finally:
        backend.close()
        forget_server_info(srv.url)
        srv.stop()


def fleet_file(tmp_path, top: str = "", acme: str = ""):
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET.format(top=top, acme=acme))
    return path


def apply(capsys, *args) -> tuple[int, str]:
    # where runs push and log, not their data: the datasets named here are not on this Hub
    code = main(["fleet", "apply", "--no-preflight", *args])
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def schedules(backend) -> dict:
    return {jobspec.labels_of(sj)["tenant"]: sj for sj in backend.api.list_scheduled_jobs(namespace=backend.namespace)}


def test_a_hub_fleet_with_nowhere_to_push_is_refused_before_any_request(hub, tmp_path, capsys):
    cfg, backend = hub
    code, out = apply(capsys, str(fleet_file(tmp_path)))
    assert code == 2 and "nothing applied, 2 tenant(s) refused" in out
    refusals = [line for line in out.splitlines() if "needs a destination (hub_model_id)" in line]
    assert len(refusals) == 2 and refusals[0].startswith("  - tenant 'acme': a run on HF Jobs needs")
    assert schedules(backend) == {}


def test_the_fleet_files_template_gives_each_tenant_its_own_repo(hub, tmp_path, capsys):
    cfg, backend = hub
    path = fleet_file(tmp_path, top='hub_model_id = "ops/adapter-{tenant}"\n',
                      acme='hub_model_id = "acme-corp/support-adapter"\n')
    code, out = apply(capsys, str(path))
    assert code == 0 and "Applied." in out, out
    have = schedules(backend)
    assert jobspec.read_request(have["acme"]).hub_model_id == "acme-corp/support-adapter"  # its own wins
    assert jobspec.read_request(have["globex"]).hub_model_id == "ops/adapter-globex"
    assert all(sj.job_spec.secrets == {"HF_TOKEN": None} for sj in have.values())
    code, out = apply(capsys, str(path))
    assert code == 0 and "Nothing to do" in out, out


def test_the_configs_template_applies_when_the_fleet_file_names_none(hub, tmp_path, capsys):
    cfg, backend = hub
    save(replace(cfg, defaults=replace(cfg.defaults, hub_model_id="ops/lora-{tenant}")))
    code, out = apply(capsys, str(fleet_file(tmp_path, acme='hub_model_id = "acme-corp/support-adapter"\n')))
    assert code == 0, out
    have = schedules(backend)
    assert jobspec.read_request(have["globex"]).hub_model_id == "ops/lora-globex"
    assert jobspec.read_request(have["acme"]).hub_model_id == "acme-corp/support-adapter"


def test_every_hub_run_logs_to_the_trackio_space(hub, tmp_path, capsys):
    cfg, backend = hub
    cfg = replace(cfg, trackio=replace(cfg.trackio, space_id="ops/trackio"),
                  defaults=replace(cfg.defaults, hub_model_id="ops/adapter-{tenant}"))
    save(cfg)
    path = fleet_file(tmp_path)
    assert apply(capsys, str(path))[0] == 0
    have = schedules(backend)
    assert {jobspec.read_request(sj).trackio_space_id for sj in have.values()} == {"ops/trackio"}
    # trigger: the run of a schedule carries what the schedule carries
    run = backend.api.trigger_scheduled_job(scheduled_job_id=have["acme"].id, namespace=NS)
    info = backend.api.inspect_job(job_id=run.id, namespace=NS)
    assert jobspec.read_request(info).trackio_space_id == "ops/trackio"
    backend.api.cancel_job(job_id=run.id, namespace=NS)
    assert "Nothing to do" in apply(capsys, str(path))[1]

    # the fleet file's Space overrides the config's: a change, shown as such
    path.write_text(FLEET.format(top='trackio_space_id = "ops/fleet-trackio"\n', acme=""))
    code, out = apply(capsys, str(path), "--dry-run")
    assert "trackio space 'ops/trackio' -> 'ops/fleet-trackio'" in out and "2 to change" in out, out
    assert apply(capsys, str(path))[0] == 0
    assert {jobspec.read_request(sj).trackio_space_id for sj in schedules(backend).values()} == {"ops/fleet-trackio"}


def test_a_hub_fleet_without_a_trackio_space_is_warned_once_and_still_applied(hub, tmp_path, capsys):
    cfg, backend = hub
    path = fleet_file(tmp_path, top='hub_model_id = "ops/adapter-{tenant}"\n')
    code, out = apply(capsys, str(path), "--dry-run")
    warning = [line for line in out.splitlines() if line.startswith("warning:") and "Trackio" in line]
    assert code == 0 and len(warning) == 1, out
    assert "logs to Trackio (project console) but names no Trackio Space" in warning[0]
    assert "metrics stay in the job's container and are lost when the job ends" in warning[0]
    assert warning[0].endswith("(acme, globex)")
    code, out = apply(capsys, str(path))  # a warning, not a refusal
    assert code == 0 and "Applied." in out, out
    assert set(schedules(backend)) == {"acme", "globex"}
    path.write_text(FLEET.format(top='hub_model_id = "ops/adapter-{tenant}"\ntrackio_space_id = "ops/trackio"\n',
                                 acme=""))
    code, out = apply(capsys, str(path), "--dry-run")
    assert code == 0 and "Trackio Space" not in out, out


TEMPLATE = 'hub_model_id = "oncall/adapter-{tenant}"'


def test_a_hub_fleet_on_the_toy_base_model_is_refused_naming_base_model(hub, tmp_path, capsys):
    cfg, backend = hub
    path = fleet_file(tmp_path, top=TEMPLATE, acme='base_model = "tiny-random"')
    code, out = apply(capsys, str(path))
    assert code == 2 and "nothing applied, 1 tenant(s) refused" in out
    assert "tenant 'acme': base_model 'tiny-random' is the offline toy model" in out
    assert "train noise on a paid GPU" in out
    assert schedules(backend) == {}


def test_a_hub_fleet_on_a_base_model_the_hub_lacks_is_refused_before_anything_is_sent(hub, tmp_path, capsys):
    """The Hub is asked (HfApi.model_info) once per base model; a missing one refuses its tenant."""
    cfg, backend = hub
    path = fleet_file(tmp_path, top=TEMPLATE, acme='base_model = "Qwen/Qwen3-0.6B-nope"')
    code, out = apply(capsys, str(path))
    assert code == 2 and "nothing applied, 1 tenant(s) refused" in out
    assert "tenant 'acme': base_model 'Qwen/Qwen3-0.6B-nope' does not exist on the Hub" in out
    assert "globex" not in out  # its base exists
    assert schedules(backend) == {}
    code, out = apply(capsys, str(fleet_file(tmp_path, top=TEMPLATE)))
    assert code == 0 and set(schedules(backend)) == {"acme", "globex"}


def test_form_and_rerun_requests_get_the_configs_destination_and_space():
    cfg = Config(namespace=NS, backend="hub")
    cfg.defaults.hub_model_id = "ops/adapter-{tenant}"
    cfg.trackio.space_id = "ops/trackio"
    bare = jobspec.TrainingRequest(tenant="acme", dataset="ops/acme-chats", base_model="Qwen/Qwen3-0.6B")
    filled = jobspec.with_config_defaults(bare, cfg)
    assert (filled.hub_model_id, filled.trackio_space_id, filled.trackio_project) == (
        "ops/adapter-acme", "ops/trackio", "console")
    own = dataclasses.replace(bare, hub_model_id="acme-corp/x", trackio_space_id="acme-corp/trackio")
    assert jobspec.with_config_defaults(own, cfg) == dataclasses.replace(own, trackio_project="console")
    sub = jobspec.build_submission(filled, backend_kind="hub", token="hf_x")
    args = jobspec.script_args_of(sub.command)
    assert args[args.index("--trackio-space-id") + 1] == "ops/trackio"
    # a local job logs to the server's own store: no Space (it would need a token it never gets)
    local = jobspec.build_submission(filled, backend_kind="local")
    assert "--trackio-space-id" not in local.command


@pytest.mark.parametrize(
    ("top", "acme", "problem"),
    [
        ('hub_model_id = "ops/shared-adapter"\n', "", "is shared by every tenant: put {tenant} in it"),
        ('hub_model_id = "ops/adapter-{tenant}-{env}"\n', "", "the only field a destination template may hold"),
        ("", 'hub_model_id = "ops/adapter-globex"\n', "tenants 'acme' and 'globex' both push to ops/adapter-globex"),
        ("", 'hub_model_id = "not a repo"\n', "'not a repo' is not a Hub model id"),
        ('trackio_space_id = "trackio"\n', "", "trackio_space_id 'trackio' must be a Space id"),
    ],
)
def test_bad_destinations_are_refused_in_the_fleet_file(tmp_path, top, acme, problem):
    text = FLEET.format(top=top, acme=acme)
    if "both push" in problem:
        text = text.replace('examples = 250\n', 'examples = 250\nhub_model_id = "ops/adapter-{tenant}"\n')
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(path, backend_kind="hub")
    assert problem in str(err.value)


@pytest.mark.parametrize("value", ["ops/shared", "adapter-{tenant}", "ops/{tenant}/x", "ops/a--{tenant}"])
def test_the_configs_template_is_checked(tmp_path, value):
    path = tmp_path / "config.toml"
    path.write_text(textwrap.dedent(f'[defaults]\nhub_model_id = "{value}"\n'))
    with pytest.raises(ConfigError, match=r"defaults.hub_model_id.*\{tenant\} in it"):
        load(path)


def test_config_keys_documents_the_template(capsys):
    assert main(["config", "keys"]) == 0
    out = capsys.readouterr().out
    assert "defaults.hub_model_id" in out and "org/adapter-{tenant}" in out


def test_a_hub_fleet_without_a_datasets_cache_is_offered_one_once(hub, tmp_path, capsys):
    """Each run would download its Hub dataset again: one line for the fleet, naming its tenants."""
    cfg, backend = hub
    path = fleet_file(tmp_path, top='hub_model_id = "ops/adapter-{tenant}"\n')
    code, out = apply(capsys, str(path), "--dry-run")
    [tip] = [line for line in out.splitlines() if line.startswith("warning:") and "downloads" in line]
    assert code == 0 and tip.endswith("(acme, globex)")
    assert "HF_DATASETS_CACHE=/data/datasets" in tip
    path.write_text(FLEET.format(top='hub_model_id = "ops/adapter-{tenant}"\ndatasets_cache = "ops/datasets-cache"\n',
                                 acme=""))
    code, out = apply(capsys, str(path), "--dry-run")
    assert code == 0 and "downloads" not in out, out
