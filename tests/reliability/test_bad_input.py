"""Bad input where it enters — the config file, `console config set`, what-if values, a fleet file
that conflicts with itself, job ids that do not exist — each refused with one clear message and
nothing changed. (Single-key config checks are tests/core/test_config.py; what-if basics
tests/core/test_whatif_cli.py; fleet-file rules tests/fleet/test_fleet_file.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from huggingface_hub._jobs_api import JobInfo
from huggingface_hub.errors import HfHubHTTPError
from tests.jobwait import wait_stage
from tests.reliability.conftest import run_python
from tests.ui.conftest import mounted_screen, shown, wait_for, wait_thread

from console import cli
from console import config as config_mod
from console.ui.refresh import DataRefreshed
from console.ui.screens.confirm import ConfirmScreen

HOSTILE_CONFIGS = {
    "wrong type": 'seats = "many"\n',
    "huge integer": "seats = 1" + "0" * 400 + "\n",
    "huge port": "[server]\nport = 99999999999999999999999\n",
    "negative workers": "[server]\nmax_running_jobs = -1\n",
    "infinite budget": "monthly_budget_usd = inf\n",
    "unknown plan": 'plan = "platinum"\n',
    "unknown flavor": '[defaults]\nflavor = "h100x64"\n',
    "duplicate key": 'plan = "pro"\nplan = "team"\n',
    "duplicate table": "[server]\nport = 1\n[server]\nport = 2\n",
    "table and key": 'server = 3\n[server]\nport = 1\n',
    "nested arrays": "seats = " + "[" * 50_000 + "]" * 50_000 + "\n",
    "not utf-8": b'plan = "\xff\xfe"\n',
    "nul byte": 'plan = "pro\x00"\n',
    "token": 'hf_token = "hf_x"\n',
    "endpoint escape": 'endpoint = "http://x\x1b]0;t\x07"\n',
}


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("body", HOSTILE_CONFIGS.values(), ids=HOSTILE_CONFIGS.keys())
def test_a_hostile_config_is_refused_in_one_line_and_never_rewritten(capsys, body):
    path = Path(os.environ["CONSOLE_CONFIG"])
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = body if isinstance(body, bytes) else body.encode()
    path.write_bytes(raw)
    for argv in (("config", "show"), ("config", "set", "plan", "team"), ("whatif",)):
        code, out, err = _run(capsys, *argv)
        assert code == 2, (argv, out, err)
        assert err.startswith("console: ") and str(path) in err
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert "\x1b" not in err and "\x07" not in err  # never echoes a control character
    assert path.read_bytes() == raw  # nothing changed


@pytest.mark.parametrize("key,value", [
    ("seats", "-5"), ("seats", "1e400"), ("seats", "9" * 30), ("plan", "gold"),
    ("defaults.flavor", "h100x64"), ("defaults.timeout_buffer", "nan"),
    ("server.port", "65536"), ("monthly_budget_usd", "nan"), ("nope", "1"),
    ("endpoint", "file:///etc/passwd"),
])
def test_config_set_refuses_bad_values_and_changes_nothing(capsys, key, value):
    config_mod.save(config_mod.Config(namespace="oncall", seats=3))
    path = Path(os.environ["CONSOLE_CONFIG"])
    before = path.read_bytes()
    code, _, err = _run(capsys, "config", "set", key, value)
    assert code == 2 and err.startswith("console: ") and "Traceback" not in err
    assert path.read_bytes() == before


@pytest.mark.parametrize("args,needle", [
    (["--model-b", "1e400"], "model_b"),
    (["--model-b", "nan"], "model_b"),
    (["--examples", "0"], "examples"),
    (["--examples", "1" + "0" * 30], "examples"),
    (["--epochs=-inf"], "epochs"),
    (["--tenants", "10000000000"], "tenants"),
    (["--seats", "0"], "seats"),
    (["--timeout-buffer", "0.1"], "buffer"),
    (["--cadence", "61 * * * *"], "cron"),
    (["--cadence", "* * * * * * * *"], "cron"),
    (["--builder-model-b", "-1"], "model_b"),
])
def test_absurd_what_if_values_get_a_clear_message(capsys, args, needle):
    code, out, err = _run(capsys, "whatif", *args)
    assert code == 2, (out, err)
    assert needle in err and "Traceback" not in err


SELF_CONFLICTING_FLEET = """\
base_model = "tiny-random"
model_b = 1.0
flavor = "t4-small"
schedule = "0 3 * * 1"

[[tenant]]
id = "acme"
dataset = "{data}"
examples = 100

[[tenant]]
id = "acme"
dataset = "{data}"
examples = 100
schedule = "0 25 * * *"

[[tenant]]
id = "globex"
dataset = "{data}"
examples = -4
flavor = "quantum"
"""


def test_a_fleet_file_that_conflicts_with_itself_changes_nothing(capsys, server, cfg, backend,
                                                                 tmp_path):
    config_mod.save(cfg)
    data = tmp_path / "rows.jsonl"
    data.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(SELF_CONFLICTING_FLEET.format(data=data))
    code, out, err = _run(capsys, "fleet", "apply", str(fleet))
    assert code == 2 and "Traceback" not in err
    for needle in ("acme", "25", "quantum", "examples"):
        assert needle in err, err
    nested = tmp_path / "nested.toml"
    nested.write_text("x = " + "[" * 50_000 + "]" * 50_000)
    code, _, err = _run(capsys, "fleet", "apply", str(nested))
    assert code == 2 and "nested" in err
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00junk")
    code, _, err = _run(capsys, "fleet", "apply", str(binary))
    assert code == 2 and "UTF-8" in err
    assert list(backend.api.list_scheduled_jobs(namespace=backend.namespace)) == []


@pytest.mark.parametrize("job_id", ["0" * 24, "nope", "../../etc/passwd", "x" * 500])
def test_a_job_id_that_does_not_exist_is_a_clear_404_at_once(backend, job_id):
    for call in (backend.api.inspect_job, backend.api.cancel_job):
        with pytest.raises(HfHubHTTPError) as err:
            call(job_id=job_id, namespace=backend.namespace)
        assert err.value.response.status_code == 404
    assert backend.policy.retries == 0  # a 404 is an answer: never retried


async def test_the_tui_handles_a_job_that_vanished(backend, cfg):
    from console.ui.app import ConsoleApp

    real = run_python(backend, "import time; time.sleep(30)")
    await wait_thread(wait_stage, backend, real.id, ("RUNNING",))
    info = backend.api.inspect_job(job_id=real.id, namespace=backend.namespace)
    ghost = JobInfo(**{**_job_json(info), "id": "f" * 24}, endpoint=backend.url)
    app = ConsoleApp(cfg, backend, refresh_seconds=60, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: real.id in app.jobs_table.rows_by_id, what="the real row")
        # after the first full read (a later one would drop the ghost as it should)
        await wait_for(pilot, lambda: getattr(app, "_synced", True) and not any(
            w.group == "refresh" and not w.is_finished for w in app.workers), what="a full read")
        app.post_message(DataRefreshed([info, ghost], None, app.clock(), full=False))
        await wait_for(pilot, lambda: ghost.id in app.jobs_table.rows_by_id, what="the ghost")
        app.jobs_table.select_job(ghost.id)
        await wait_for(pilot, lambda: app.log_pane.ended, what="the ghost's log to fail")
        assert "not found" in (app.log_pane.error or "")
        await pilot.press("c")
        await mounted_screen(pilot, ConfirmScreen, what="the dialog")
        await pilot.press("y")
        await wait_for(pilot, lambda: any("not found" in n.message for n in shown(app)),
                       what="the failure message")
        assert app.is_running
    backend.api.cancel_job(job_id=real.id, namespace=backend.namespace)


def _job_json(info) -> dict:
    return {
        "id": info.id, "createdAt": info.created_at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        "dockerImage": info.docker_image, "command": info.command, "arguments": info.arguments,
        "environment": info.environment, "secrets": {}, "flavor": info.flavor,
        "labels": info.labels, "status": {"stage": info.status.stage, "message": None},
        "owner": {"id": info.owner.id, "name": info.owner.name, "type": "user"},
    }
