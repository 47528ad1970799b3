"""What the embedded Jobs server accepts in a submitted job spec, and the 400 it answers otherwise,
checked on the spec itself (the same checks the API runs on every POST, without a server): each
refusal names the field and the rule, so `hf jobs run` shows the user what to fix."""

from __future__ import annotations

import json

import pytest

from console.prices import HF_DEFAULT_TIMEOUT_SECONDS, HF_MAX_TIMEOUT_SECONDS
from console.server.jobs.schema import MAX_ENTRIES, JobSpec, LabelsBody, ScheduledJobRequest, decode
from console.server.jobs.wire import ApiError, check_unicode

RULE = "only alphanumeric characters, dashes and underscores, at most 100 characters"
NUL = "a NUL character cannot be given to a process"
ENV_RULE = "letters, digits and '_', not starting with a digit"


def spec(**fields):
    body = {"dockerImage": "python:3.12", "command": ["python", "-c", "print(1)"]}
    for key, value in fields.items():
        if value is ...:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def parse(body):
    return decode(body, JobSpec, "the job spec").stored()


def refused(body, kind=JobSpec) -> str:
    with pytest.raises(ApiError) as exc:
        decode(body, kind, "the job spec")
    assert exc.value.status == 400
    return exc.value.message


def labels_refused(labels) -> str:
    with pytest.raises(ApiError) as exc:
        decode({"labels": labels}, LabelsBody)
    assert exc.value.status == 400
    return exc.value.message


def test_a_minimal_spec_gets_the_defaults_hf_gives():
    out, secrets = parse(spec())
    assert out == {
        "dockerImage": "python:3.12", "command": ["python", "-c", "print(1)"], "arguments": [],
        "environment": {}, "flavor": "cpu-basic", "timeoutSeconds": HF_DEFAULT_TIMEOUT_SECONDS,
        "attempts": 1, "labels": {}, "ssh": False, "tags": [],
    }
    assert secrets == {}


def test_a_full_spec_is_kept_and_secrets_are_set_apart():
    out, secrets = parse(spec(
        arguments=["--x", "1"], environment={"A": "1", "N": 2, "B": True}, secrets={"HF_TOKEN": "hf_x"},
        flavor="t4-small", timeoutSeconds=600.0, attempts=3, labels={"tenant": "acme", "empty": ""},
        ssh={"enabled": True}, tags=["nightly"], arch="arm64"))
    assert out["arguments"] == ["--x", "1"]
    assert out["environment"] == {"A": "1", "N": "2", "B": "True"}
    assert secrets == {"HF_TOKEN": "hf_x"} and "secrets" not in out
    assert (out["flavor"], out["timeoutSeconds"], out["attempts"]) == ("t4-small", 600, 3)
    assert out["labels"] == {"tenant": "acme", "empty": ""}
    assert out["ssh"] is True and out["tags"] == ["nightly"]
    assert parse(spec(ssh=True))[0]["ssh"] is True
    assert parse(spec(flavor=""))[0]["flavor"] == "cpu-basic"
    assert parse(spec(timeout=120))[0]["timeoutSeconds"] == 120  # the older field name


def test_the_parts_beyond_image_and_command_are_kept_normalised():
    out, _ = parse(spec(expose={"ports": [80, 80], "portsPublic": [81]}, network={"group": "g"},
                        volumes=[{"type": "bucket", "source": "a/b", "mountPath": "/data/"},
                                 {"source": "a/m", "mountPath": "/models", "readOnly": False}],
                        resourceGroupId="rg-1"))
    assert out["expose"] == {"ports": [80, 81], "portsPublic": [81]}
    assert out["network"] == {"group": "g", "aliases": []}
    assert out["volumes"] == [
        {"type": "bucket", "source": "a/b", "mountPath": "/data", "readOnly": False},
        {"type": "model", "source": "a/m", "mountPath": "/models", "readOnly": True},  # repos: read-only
    ]
    assert out["resourceGroupId"] == "rg-1"


@pytest.mark.parametrize("arch", [None, "", "amd64", "x86_64", "arm64"])
def test_the_architectures_the_host_can_be(arch):
    assert parse(spec(arch=arch))[0]["dockerImage"] == "python:3.12"


@pytest.mark.parametrize(("body", "message"), [
    ([1, 2], "the job spec: expected an object, got a list"),
    (spec(spaceId="user/space"), "Space images (spaceId) are not supported by the local Jobs server: "
                                 "use a Docker image name and a command"),
    (spec(spaceId="user/space", dockerImage=...), "Space images (spaceId) are not supported by the local "
                                                  "Jobs server: use a Docker image name and a command"),
    (spec(arch="riscv"), "arch: unknown arch 'riscv'; known: amd64, x86_64, arm64"),
    (spec(arch=5), "arch: expected a string or null, got a whole number"),
    (spec(command=[]), "command: expected a list of length >= 1, got 0 entries"),
    (spec(command="python"), "command: expected a list, got a string"),
    (spec(command=["python", 3]), "command[1]: expected a string, got a whole number"),
    (spec(command=["python", "a\0b"]), f"command[1]: invalid value 'a\\x00b': {NUL}"),
    (spec(arguments="--x"), "arguments: expected a list or null, got a string"),
    (spec(arguments=["ok", "\0"]), f"arguments[1]: invalid value '\\x00': {NUL}"),
    (spec(dockerImage=...), "dockerImage is required"),
    (spec(dockerImage=""), "dockerImage: expected a string of length >= 1, got ''"),
    (spec(dockerImage="py\0thon"), f"dockerImage: invalid value 'py\\x00thon': {NUL}"),
    (spec(flavor=7), "flavor: expected a string or null, got a whole number"),
    (spec(attempts=0), "attempts: expected a whole number >= 1, got 0"),
    (spec(attempts=11), "attempts: expected a whole number <= 10, got 11"),
    (spec(attempts=True), "attempts: expected a whole number, got true/false"),
    (spec(attempts=2.0), "attempts: expected a whole number, got a number"),
    (spec(environment=["A=1"]), "environment: expected an object or null, got a list"),
    (spec(environment={"A": None}), "environment.A: expected true/false, a number or a string, got null"),
    (spec(environment={"A": [1]}), "environment.A: expected true/false, a number or a string, got a list"),
    (spec(environment={"A": "x\0"}), f"environment.A: invalid value 'x\\x00': {NUL}"),
    (spec(environment={"1A": "x"}), f"environment: invalid key '1A': {ENV_RULE}"),
    (spec(secrets={"MY-TOKEN": "x"}), f"secrets: invalid key 'MY-TOKEN': {ENV_RULE}"),
    (spec(ssh="yes"), "ssh: expected true/false, an object or null, got a string"),
    (spec(ssh={"enabled": 1}), "ssh.enabled: expected true/false or null, got a whole number"),
    (spec(timeoutSeconds="600"), "timeoutSeconds: expected a number or null, got a string"),
    (spec(timeout=0), "timeout: expected a number >= 1, got 0"),
    (spec(expose={"portsPublic": [0]}), "expose.portsPublic[0]: expected a whole number >= 1, got 0"),
    (spec(network={"group": "g", "aliases": ["a", "a"]}), "network: aliases must be unique"),
    (spec(network={"group": "G"}), "network.group: invalid value 'G': lowercase letters, digits and dashes, "
                                   "46 at most"),
    (spec(volumes=[{"source": "a/b", "mountPath": "/"}]),
     "volumes[0]: mountPath '/' must be a plain absolute path, not '/'"),
    (spec(volumes=[{"source": "a/b", "mountPath": "/proc/x"}]), "volumes[0]: mountPath '/proc/x' is reserved"),
    (spec(volumes=[{"source": "a/b", "mountPath": "/d"}, {"source": "a/c", "mountPath": "/d/e"}]),
     "volumes[1].mountPath: /d/e overlaps another volume"),
])
def test_each_malformed_field_is_a_400_that_names_it(body, message):
    assert refused(body) == message


def test_a_refused_secret_names_the_secret_and_never_shows_its_value():
    message = refused(spec(secrets={"HF_TOKEN": "hf_secret\0value"}))
    assert message == f"secrets.HF_TOKEN: invalid value (a secret value, not shown): {NUL}"
    assert "hf_secret" not in refused(spec(secrets={"HF_TOKEN": "hf_secret" * 100}, attempts=0))
    message = refused({"schedule": "@daily", "jobSpec": spec(secrets={"S": "hf_secret\0"})}, ScheduledJobRequest)
    assert message.startswith("jobSpec.secrets.S: invalid value (a secret value") and "hf_secret" not in message


def test_an_unknown_flavor_lists_the_known_ones():
    message = refused(spec(flavor="h100-giant"))
    assert message.startswith("flavor: unknown flavor 'h100-giant'; known: t4-small, t4-medium, ")
    assert "cpu-basic" in message


def test_at_most_a_thousand_entries_in_each_list_and_object():
    ok = [str(i) for i in range(MAX_ENTRIES)]
    assert len(parse(spec(arguments=ok))[0]["arguments"]) == MAX_ENTRIES
    assert refused(spec(arguments=[*ok, "x"])) == (f"arguments: expected a list of length <= {MAX_ENTRIES}, "
                                                   f"got {MAX_ENTRIES + 1} entries")
    env = {f"V{i}": "x" for i in range(MAX_ENTRIES)}
    assert len(parse(spec(environment=env))[0]["environment"]) == MAX_ENTRIES
    message = refused(spec(environment={**env, "W": "x"}))
    assert message.startswith(f"environment: expected an object of length <= {MAX_ENTRIES}")
    tags = [f"t{i}" for i in range(MAX_ENTRIES)]
    assert parse(spec(tags=tags))[0]["tags"] == tags
    assert refused(spec(tags=[*tags, "x"])).startswith(f"tags: expected a list of length <= {MAX_ENTRIES}")


@pytest.mark.parametrize(("value", "expected"), [(None, HF_DEFAULT_TIMEOUT_SECONDS), (1, 1), (90.9, 90),
                                                 (HF_MAX_TIMEOUT_SECONDS, HF_MAX_TIMEOUT_SECONDS)])
def test_a_timeout_is_whole_seconds_from_one_to_seven_days(value, expected):
    assert parse(spec(timeoutSeconds=value))[0]["timeoutSeconds"] == expected


@pytest.mark.parametrize(("value", "message"), [
    (True, "timeoutSeconds: expected a number or null, got true/false"),
    ("60", "timeoutSeconds: expected a number or null, got a string"),
    (float("nan"), "timeoutSeconds: expected a number >= 1, got nan"),
    (float("inf"), "timeoutSeconds: expected a number <= 604800, got inf"),
    (0, "timeoutSeconds: expected a number >= 1, got 0"),
    (0.5, "timeoutSeconds: expected a number >= 1, got 0.5"),
    (HF_MAX_TIMEOUT_SECONDS + 1, "timeoutSeconds: expected a number <= 604800, got 604801"),
    (-5, "timeoutSeconds: expected a number >= 1, got -5"),
])
def test_a_timeout_out_of_range_or_not_a_number_is_refused(value, message):
    assert refused(spec(timeoutSeconds=value)) == message


def test_labels_as_hf_accepts_them():
    assert decode({"labels": None}, LabelsBody).labels is None
    assert parse(spec(labels={"a-b_C9": "v-1_X", "k": ""}))[0]["labels"] == {"a-b_C9": "v-1_X", "k": ""}
    assert parse(spec(labels={"k" * 100: "v" * 100}))[0]["labels"] == {"k" * 100: "v" * 100}


@pytest.mark.parametrize(("labels", "message"), [
    ({"bad key": "v"}, f"labels: invalid key 'bad key': {RULE} (at least 1)"),
    ({"": "v"}, f"labels: invalid key '': {RULE} (at least 1)"),
    ({"k" * 101: "v"}, f"labels: invalid key '{'k' * 99}...: {RULE} (at least 1)"),  # quoted, cut short
    ({"env": "prod.eu"}, f"labels.env: invalid value 'prod.eu': {RULE}"),
    ({"name": "my job"}, f"labels.name: invalid value 'my job': {RULE}"),
    ({"ok": "a", "env": "v" * 101}, f"labels.env: invalid value '{'v' * 99}...: {RULE}"),
    ({"env": 5}, "labels.env: expected a string, got a whole number"),  # no numbers: 5 and "5" would both exist
    ({"env": "a\nb"}, f"labels.env: invalid value 'a\\nb': {RULE}"),
    ({"team\n": "a"}, f"labels: invalid key 'team\\n': {RULE} (at least 1)"),  # `$` would let it through
    ({"team": "a\n"}, f"labels.team: invalid value 'a\\n': {RULE}"),
])
def test_labels_hf_would_refuse_are_a_400_naming_the_label(labels, message):
    assert labels_refused(labels) == message
    assert refused(spec(labels=labels)) == message


def test_tags_as_hf_accepts_them():
    assert parse(spec(tags=None))[0]["tags"] == []
    assert parse(spec(tags=["a", "b-c_1"]))[0]["tags"] == ["a", "b-c_1"]
    for bad, message in ((["a b"], f"tags[0]: invalid value 'a b': {RULE} (at least 1)"),
                         (["ok", ""], f"tags[1]: invalid value '': {RULE} (at least 1)"),
                         ("a", "tags: expected a list or null, got a string"),
                         ([1], "tags[0]: expected a string, got a whole number")):
        assert refused(spec(tags=bad)) == message


def test_a_body_without_a_surrogate_escape_is_taken_as_it_is():
    doc = {"command": ["echo", "héllo ✓"]}
    raw = json.dumps(doc).encode()
    assert check_unicode(doc, raw) is doc
    assert check_unicode(doc) is doc


@pytest.mark.parametrize(("raw", "where"), [
    (b'{"command": ["echo", "\\ud800"]}', "command[1]"),
    (b'{"environment": {"A": "x\\udfff"}}', "environment.A"),
    (b'{"labels": {"\\ud83d": "v"}}', "labels.'\\ud83d'"),
    (b'"\\udc00"', "the body"),
    (b'{"a": [{"b": ["ok", "\\uD800"]}]}', "a[0].b[1]"),
])
def test_a_lone_surrogate_is_a_400_naming_where_it_is(raw, where):
    with pytest.raises(ApiError) as exc:
        check_unicode(json.loads(raw), raw)
    assert exc.value.status == 400
    assert exc.value.message == f"{where}: not valid Unicode (a lone surrogate escape such as \\ud800)"


def test_a_valid_pair_of_surrogate_escapes_is_an_emoji_and_fine():
    raw = b'{"command": ["echo", "\\ud83d\\ude00"]}'
    doc = json.loads(raw)
    assert check_unicode(doc, raw) == {"command": ["echo", "\U0001F600"]}


def test_the_edges_of_what_a_spec_may_say():
    assert parse(spec(attempts=10))[0]["attempts"] == 10
    assert parse(spec(spaceId=""))[0]["dockerImage"] == "python:3.12"  # empty: no Space
    assert parse(spec(spaceId=None))[0]["dockerImage"] == "python:3.12"
    assert parse(spec(secrets={"SEED": 7, "ON": False}))[1] == {"SEED": "7", "ON": "False"}
    assert refused(spec(secrets={"HF_TOKEN": None})) == ("secrets.HF_TOKEN: expected true/false, a number or "
                                                         "a string, got null")
    assert refused(spec(secrets="hf_x")) == "secrets: expected an object or null, got a string"


@pytest.mark.parametrize(("raw", "where"), [
    (b'{"\\ud800": 1}', "'\\ud800'"),  # a key at the top
    (b'{"a": ["x", {"y": 1}], "b": "\\ud800"}', "b"),  # after a finished container, its siblings
])
def test_a_lone_surrogate_anywhere_is_named(raw, where):
    with pytest.raises(ApiError) as exc:
        check_unicode(json.loads(raw), raw)
    assert exc.value.message == f"{where}: not valid Unicode (a lone surrogate escape such as \\ud800)"


def test_the_walk_that_names_the_field_stops_after_two_hundred_thousand_values():
    # the body, then its items one by one: the 199,999th item is the last one looked at
    doc = ["ok"] * 200_000
    doc[199_998] = "\ud800"
    with pytest.raises(ApiError) as exc:
        check_unicode(doc)
    assert exc.value.message.startswith("[199998]: ")
    doc[199_998], doc[199_999] = "ok", "\ud800"
    with pytest.raises(ApiError) as exc:
        check_unicode(doc)
    assert exc.value.status == 400
    assert exc.value.message == "the body: not valid Unicode (a lone surrogate escape such as \\ud800)"
