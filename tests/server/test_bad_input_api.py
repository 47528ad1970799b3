"""Bad input to the Jobs API: each is a 400 whose JSON error names the field, and nothing changes.

Each case is one a server could answer with a bare 500 (and a dropped keep-alive connection), or
accept and store: NaN / Infinity timeouts, wrong JSON types, a cron that parses but never fires, an
over-large cursor, a thousand label filters, env and secret names with a trailing newline, JSON
nested 100,000 deep, a lone surrogate escape (`"\\ud800"`: stored, it would make the runner fail
on every tick and hold up every queued job).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from jobs_helpers import NAMESPACE, make_server

from console.server import LocalServer

SPEC = {"dockerImage": "python:3.12", "command": ["sleep", "30"]}


@pytest.fixture(scope="module", autouse=True)
def _isolated_dirs(tmp_path_factory) -> Iterator[Path]:
    """tests/conftest.py's isolation, for the whole module: the module's one server must not
    start in the user's real data folder, before the per-test isolation would apply."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CONSOLE_CONFIG", str(home / "config" / "config.toml"))
        mp.setenv("CONSOLE_DATA_DIR", str(home / "data"))
        mp.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        mp.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
        mp.setenv("HF_HOME", str(home / ".cache" / "huggingface"))
        mp.delenv("HF_TOKEN", raising=False)
        mp.delenv("CONSOLE_SERVER_TOKEN", raising=False)
        mp.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
        yield home


@pytest.fixture(scope="module")
def srv(_isolated_dirs: Path) -> Iterator[LocalServer]:
    server = make_server()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def client(srv: LocalServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {srv.token}"},
                      timeout=30) as c:
        yield c


def _state(client: httpx.Client) -> tuple[bytes, bytes]:
    jobs = client.get(f"/api/jobs/{NAMESPACE}")
    scheduled = client.get(f"/api/scheduled-jobs/{NAMESPACE}")
    assert jobs.status_code == scheduled.status_code == 200
    return jobs.content, scheduled.content


def _spec(**extra: object) -> str:
    return json.dumps({**SPEC, **extra})


def _raw_spec(fragment: str) -> str:
    """A spec with a raw JSON fragment (NaN and Infinity are not expressible with json.dumps)."""
    return _spec()[:-1] + "," + fragment + "}"


JOB_CASES = {
    "NaN timeout": (_raw_spec('"timeoutSeconds": NaN'), "timeoutSeconds"),
    "Infinity timeout": (_raw_spec('"timeoutSeconds": Infinity'), "timeoutSeconds"),
    "-Infinity timeout": (_raw_spec('"timeout": -Infinity'), "timeout"),
    "1e400 timeout": (_raw_spec('"timeoutSeconds": 1e400'), "timeoutSeconds"),
    "string timeout": (_spec(timeoutSeconds="3600"), "timeoutSeconds"),
    "flavor list": (_spec(flavor=["cpu-basic"]), "flavor"),
    "flavor object": (_spec(flavor={"name": "cpu-basic"}), "flavor"),
    "flavor number": (_spec(flavor=7), "flavor"),
    "expose list": (_spec(expose=[8000]), "expose"),
    "expose ports string": (_spec(expose={"ports": "8000"}), "expose.ports"),
    "expose port bool": (_spec(expose={"ports": [True]}), "expose.ports"),
    "expose port 0": (_spec(expose={"portsPublic": [0]}), "expose.portsPublic"),
    "labels list": (_spec(labels=["a"]), "labels"),
    "label value number": (_spec(labels={"team": 5}), "labels.team"),
    "label value null": (_spec(labels={"team": None}), "labels.team"),
    "label value object": (_spec(labels={"team": {"a": 1}}), "labels.team"),
    "label key newline": (_spec(labels={"team\n": "a"}), "labels"),
    "label value newline": (_spec(labels={"team": "a\n"}), "labels.team"),
    "label key with CR and NUL, no value": (_spec(labels={"a\r\x00": None}), "labels"),
    "env name newline": (_spec(environment={"HF_HOME\n": "x"}), "environment"),
    "secret name newline": (_spec(secrets={"HF_TOKEN\n": "x"}), "secrets"),
    "env value list": (_spec(environment={"N": [1]}), "environment.N"),
    "secret value null": (_spec(secrets={"S": None}), "secrets.S"),
    "env value NUL": (_spec(environment={"N": "a\x00b"}), "environment.N"),
    "command NUL": (_spec(command=["sleep\x00", "1"]), "command[0]"),
    "command number": (_spec(command=[1]), "command"),
    "arguments object": (_spec(arguments={"a": 1}), "arguments"),
    "tags newline": (_spec(tags=["a\n"]), "tags"),
    "ssh string": (_spec(ssh="yes"), "ssh"),
    "ssh enabled string": (_spec(ssh={"enabled": "yes"}), "ssh.enabled"),
    "attempts float": (_spec(attempts=2.5), "attempts"),
    "arch list": (_spec(arch=["amd64"]), "arch"),
    "volume type list": (_spec(volumes=[{"type": ["bucket"], "source": "a/b",
                                         "mountPath": "/data"}]), "volumes[0]"),
    "network aliases string": (_spec(network={"group": "g", "aliases": "a"}), "network.aliases"),
    "network group newline": (_spec(network={"group": "g\n"}), "network.group"),
    "resource group object": (_spec(resourceGroupId={"a": 1}), "resourceGroupId"),
    "a thousand and one env vars": (_spec(environment={f"V{i}": "x" for i in range(1001)}),
                                    "environment"),
    "lone surrogate in command": (_spec()[:-1] + ', "arguments": ["ok", "\\ud800"]}',
                                  "arguments[1]"),
    "lone surrogate in env name": (_spec()[:-1] + ', "environment": {"\\udc00": "x"}}',
                                   "environment"),
    "lone surrogate in label": (_spec()[:-1] + ', "labels": {"team": "\\udfff"}}', "labels.team"),
    "nested 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nested"),
    "nested object": ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested"),
    "not an object": ("[1, 2]", "job spec"),
}


@pytest.mark.parametrize("body,field", JOB_CASES.values(), ids=JOB_CASES.keys())
def test_a_bad_job_spec_is_a_400_naming_the_field_and_runs_nothing(client, body, field):
    before = _state(client)
    resp = client.post(f"/api/jobs/{NAMESPACE}", content=body,
                       headers={"content-type": "application/json"})
    assert resp.status_code == 400, resp.text[:300]
    message = resp.json()["error"]
    assert field in message, message
    assert _state(client) == before


SCHEDULE_CASES = {
    "30 February": ({"schedule": "0 0 30 2 *", "jobSpec": SPEC}, "schedule"),
    "31 April": ({"schedule": "0 12 31 4 *", "jobSpec": SPEC}, "schedule"),
    "31 February or April": ({"schedule": "0 0 31 2,4 *", "jobSpec": SPEC}, "schedule"),
    "schedule number": ({"schedule": 5, "jobSpec": SPEC}, "schedule"),
    "schedule newline": ({"schedule": "@daily\n@hourly", "jobSpec": SPEC}, "schedule"),
    "schedule 10k chars": ({"schedule": "* " * 5000, "jobSpec": SPEC}, "schedule"),
    "suspend string": ({"schedule": "@daily", "jobSpec": SPEC, "suspend": "no"}, "suspend"),
    "concurrency number": ({"schedule": "@daily", "jobSpec": SPEC, "concurrency": 1},
                           "concurrency"),
    "jobSpec missing": ({"schedule": "@daily"}, "jobSpec"),
    "jobSpec NaN timeout": ({"schedule": "@daily", "jobSpec": {**SPEC, "timeout": float("nan")}},
                            "timeout"),
    "jobSpec flavor list": ({"schedule": "@daily", "jobSpec": {**SPEC, "flavor": []}}, "flavor"),
}


@pytest.mark.parametrize("body,field", SCHEDULE_CASES.values(), ids=SCHEDULE_CASES.keys())
def test_a_bad_scheduled_job_is_a_400_naming_the_field_and_schedules_nothing(client, body, field):
    before = _state(client)
    resp = client.post(f"/api/scheduled-jobs/{NAMESPACE}", content=json.dumps(body),
                       headers={"content-type": "application/json"})
    assert resp.status_code == 400, resp.text[:300]
    assert field in resp.json()["error"], resp.text
    assert _state(client) == before


def test_an_escaped_surrogate_pair_is_one_valid_character(client):
    resp = client.post(f"/api/jobs/{NAMESPACE}", content=_spec()[:-1]
                       + ', "environment": {"E": "\\ud83d\\ude00"}}')
    assert resp.status_code == 200, resp.text
    assert resp.json()["environment"] == {"E": "\U0001f600"}
    assert client.post(f"/api/jobs/{NAMESPACE}/{resp.json()['id']}/cancel").status_code == 200


def test_numbers_in_env_are_taken_as_text_as_huggingface_hub_sends_them(client):
    """`run_job(env=...)` is typed `dict[str, Any]`: a number there is not bad input."""
    resp = client.post(f"/api/jobs/{NAMESPACE}", json={**SPEC, "environment": {"N": 3, "F": 0.5}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["environment"] == {"N": "3", "F": "0.5"}
    assert client.post(f"/api/jobs/{NAMESPACE}/{resp.json()['id']}/cancel").status_code == 200


def test_a_stored_schedule_that_never_fires_cannot_be_resumed(client, srv):
    """Before such crons were refused, a suspended one could be stored; resuming it was a 500."""
    sj = client.post(f"/api/scheduled-jobs/{NAMESPACE}",
                     json={"schedule": "@daily", "jobSpec": SPEC, "suspend": True}).json()
    path = f"/api/scheduled-jobs/{NAMESPACE}/{sj['id']}"
    try:
        srv.service.store.update_scheduled(sj["id"], schedule="0 0 30 2 *")
        resp = client.post(f"{path}/resume")
        assert resp.status_code == 400 and "never fires" in resp.json()["error"]
        assert client.get(path).json()["suspend"] is True
        resp = client.post(f"{path}/schedule", json={"schedule": "@weekly"})
        assert resp.status_code == 200
        assert client.post(f"{path}/resume").json()["suspend"] is False
    finally:
        client.delete(path)


def test_a_leap_day_schedule_is_accepted(client):
    resp = client.post(f"/api/scheduled-jobs/{NAMESPACE}",
                       json={"schedule": "0 0 29 2 *", "jobSpec": SPEC, "suspend": True})
    assert resp.status_code == 200, resp.text
    assert client.delete(f"/api/scheduled-jobs/{NAMESPACE}/{resp.json()['id']}").status_code == 200


LIST_CASES = {
    "cursor past SQLite's integers": ("cursor=" + "9" * 30, "cursor"),
    "cursor of 5000 digits": ("cursor=" + "9" * 5000, "cursor"),
    "negative cursor": ("cursor=-1", "cursor"),
    "cursor 1e3": ("cursor=1e3", "cursor"),
    "cursor --5": ("cursor=--5", "cursor"),
    "cursor with a superscript digit": ("cursor=%C2%B2", "cursor"),
    "limit +5": ("limit=%2B5", "limit"),
    "limit of 30 digits": ("limit=" + "9" * 30, "limit"),
    "a thousand label filters": ("&".join(f"label=k{i}=v" for i in range(1000)), "label"),
    "label filter without =": ("label=team", "label"),
    "unknown stage": ("stage=nope", "stage"),
}


@pytest.mark.parametrize("query,field", LIST_CASES.values(), ids=LIST_CASES.keys())
def test_a_bad_list_query_is_a_400_naming_the_parameter(client, query, field):
    resp = client.get(f"/api/jobs/{NAMESPACE}?{query}")
    assert resp.status_code == 400, resp.text[:300]
    assert field in resp.json()["error"]


def test_a_thousand_label_filters_on_scheduled_jobs_are_a_400(client):
    query = "&".join(f"label=k{i}=v" for i in range(1000))
    resp = client.get(f"/api/scheduled-jobs/{NAMESPACE}?{query}")
    assert resp.status_code == 400 and "label" in resp.json()["error"]


def test_bad_updates_of_a_job_change_nothing(client):
    job = client.post(f"/api/jobs/{NAMESPACE}", json={**SPEC, "labels": {"team": "a"}}).json()
    path = f"/api/jobs/{NAMESPACE}/{job['id']}"
    try:
        before = client.get(path).json()
        for sub, body, field in [
            ("labels", {"labels": {"team": 5}}, "labels.team"),
            ("labels", {"labels": {"team\n": "b"}}, "labels"),
            ("labels", [1], "labels"),
            ("expose", [8000], "ports"),
            ("expose", {"ports": [70000]}, "expose.ports"),
            ("expose", "x", "ports"),
        ]:
            resp = client.put(f"{path}/{sub}", content=json.dumps(body))
            assert resp.status_code == 400, (sub, body, resp.text)
            assert field in resp.json()["error"], (sub, body, resp.text)
        assert client.get(f"{path}/logs?tail=" + "9" * 30).status_code == 400
        after = client.get(path).json()
        assert after["labels"] == before["labels"] == {"team": "a"}
        assert after.get("expose") == before.get("expose")
    finally:
        client.post(f"{path}/cancel")


def test_bad_updates_of_a_scheduled_job_change_nothing(client):
    sj = client.post(f"/api/scheduled-jobs/{NAMESPACE}",
                     json={"schedule": "@daily", "jobSpec": SPEC, "suspend": True}).json()
    path = f"/api/scheduled-jobs/{NAMESPACE}/{sj['id']}"
    try:
        for sub, body, field in [
            ("schedule", {"schedule": "0 0 30 2 *"}, "schedule"),
            ("schedule", {"schedule": ["@daily"]}, "schedule"),
            ("labels", {"labels": {"a": 1}}, "labels.a"),
        ]:
            method = client.post if sub == "schedule" else client.put
            resp = method(f"{path}/{sub}", content=json.dumps(body))
            assert resp.status_code == 400, (sub, body, resp.text)
            assert field in resp.json()["error"]
        after = client.get(path).json()
        assert after["schedule"] == "@daily" and after["jobSpec"]["labels"] is None
    finally:
        client.delete(path)


def test_the_connection_survives_bad_input(client, srv):
    """One keep-alive connection through every kind of bad input, answering after each (a 500
    would drop the connection)."""
    with httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {srv.token}"},
                      timeout=30) as one:
        for body, _ in list(JOB_CASES.values())[:10]:
            assert one.post(f"/api/jobs/{NAMESPACE}", content=body).status_code == 400
            assert one.get("/api/whoami-v2").status_code == 200


def test_the_server_runs_in_the_tests_data_folder(srv, _isolated_dirs):
    from console.server import paths

    assert paths.db_path().is_relative_to(_isolated_dirs)


def test_the_openapi_description_is_served_and_names_this_namespace(srv):
    resp = httpx.get(f"{srv.url}/openapi.json", timeout=10)
    assert resp.status_code == 200
    doc = resp.json()
    assert doc["openapi"].startswith("3.")
    run = doc["paths"]["/api/jobs/{namespace}"]["post"]
    assert run["parameters"][0]["schema"]["enum"] == [NAMESPACE]
    assert doc["servers"] == [{"url": srv.url}]
    assert {"/api/jobs/{namespace}/{job_id}/logs", "/api/scheduled-jobs/{namespace}/{sj_id}/run",
            "/api/whoami-v2", "/api/jobs/hardware"} <= set(doc["paths"])


BUCKET = f"/api/buckets/{NAMESPACE}/inputs"
BUCKET_CASES = {
    "paths-info nested 100,000 deep": ("POST", f"{BUCKET}/paths-info", b"[" * 100_000, 400, "nested"),
    "paths-info lone surrogate": ("POST", f"{BUCKET}/paths-info", b'{"paths": ["\\ud800"]}', 400,
                                  "paths[0]"),
    "paths-info not an object": ("POST", f"{BUCKET}/paths-info", b"[1]", 400, "paths"),
    "paths-info over 8 MiB": ("POST", f"{BUCKET}/paths-info",
                              b'{"paths": ["' + b"a" * (9 * 1024 * 1024) + b'"]}', 413, "8 MiB"),
    "create nested deep": ("POST", f"/api/buckets/{NAMESPACE}/deep", b"{" * 100_000, 400, "JSON"),
    "batch lone surrogate": ("POST", f"{BUCKET}/batch", b'{"type": "deleteFile", "path": "\\udc00"}\n',
                             400, "path"),
    "batch nested deep": ("POST", f"{BUCKET}/batch", b"[" * 100_000 + b"\n", 400, "nested"),
    "bucket name of 300 characters": ("POST", f"/api/buckets/{NAMESPACE}/{'x' * 300}", b"{}", 400,
                                      "bucket id"),
}


@pytest.mark.parametrize("method,path,body,status,needle", BUCKET_CASES.values(),
                         ids=BUCKET_CASES.keys())
def test_bad_input_to_the_bucket_calls_is_a_4xx_and_changes_nothing(client, method, path, body,
                                                                    status, needle):
    assert client.post(BUCKET, json={}).status_code in (200, 409)
    before = client.get(f"/api/buckets/{NAMESPACE}").json()
    resp = client.request(method, path, content=body)
    assert resp.status_code == status, resp.text[:300]
    assert needle in resp.json()["error"]
    assert client.get(f"/api/buckets/{NAMESPACE}").json() == before


@pytest.mark.parametrize("route,what", [("v1/shards", "shard"), ("v1/xorbs/default/" + "a" * 64, "xorb")])
def test_a_streamed_shard_or_xorb_over_its_cap_is_a_413(client, monkeypatch, route, what):
    """Without a Content-Length (chunked) a shard was read whole, however large, and a xorb too."""
    from console.server.hub import xetcas

    monkeypatch.setattr(xetcas, "MAX_SHARD_BYTES", 1024 * 1024)
    monkeypatch.setattr(xetcas, "MAX_XORB_BYTES", 1024 * 1024)
    assert client.post(BUCKET, json={}).status_code in (200, 409)
    grant = client.get(f"{BUCKET}/xet-write-token").json()

    def body():
        for _ in range(4):
            yield b"\0" * (512 * 1024)

    resp = httpx.post(f"{grant['casUrl']}/{route}", content=body(), timeout=30,
                      headers={"Authorization": f"Bearer {grant['accessToken']}"})
    assert resp.status_code == 413 and what in resp.json()["error"]


def test_finding_a_lone_surrogate_does_bounded_work():
    """A body without a surrogate escape is not walked at all; one with a lone surrogate is
    walked at most 200,000 values to name the field, then refused without a name."""
    from console.server.jobs.wire import ApiError, check_unicode

    raw = b"[" + b",".join([b"1"] * 1_000_000) + b"]"
    doc = json.loads(raw)
    assert check_unicode(doc, raw) is doc
    raw = raw[:-1] + b',"\\ud800"]'
    with pytest.raises(ApiError) as err:
        check_unicode(json.loads(raw), raw)
    assert err.value.status == 400 and err.value.message.startswith("the body: not valid Unicode")
    raw = b'{"a": [[1, {"b\\udc00": 2}]]}'
    with pytest.raises(ApiError) as err:
        check_unicode(json.loads(raw), raw)
    assert err.value.message.startswith("a[0][1].'b\\udc00': not valid Unicode")
