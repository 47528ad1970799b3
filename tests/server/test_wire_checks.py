"""What the embedded Jobs server accepts in a submitted job spec, and the 400 it answers otherwise,
checked on the spec itself (the same checks the API runs on every POST, without a server): each
refusal names the field and the rule, so `hf jobs run` shows the user what to fix."""

from __future__ import annotations

import json

import pytest

from console.prices import HF_DEFAULT_TIMEOUT_SECONDS
from console.server.jobs.wire import (
    MAX_ENTRIES,
    MAX_TIMEOUT_SECONDS,
    ApiError,
    check_unicode,
    parse_flag,
    parse_job_spec,
    parse_labels,
    parse_tags,
    parse_timeout,
)

RULE = "only alphanumeric characters, dashes and underscores, at most 100 characters"


def spec(**fields):
    body = {"dockerImage": "python:3.12", "command": ["python", "-c", "print(1)"]}
    for key, value in fields.items():
        if value is ...:
            body.pop(key, None)
        else:
            body[key] = value
    return body


def refused(body) -> str:
    with pytest.raises(ApiError) as exc:
        parse_job_spec(body)
    assert exc.value.status == 400
    return exc.value.message


def test_a_minimal_spec_gets_the_defaults_hf_gives():
    out, secrets = parse_job_spec(spec())
    assert out == {
        "dockerImage": "python:3.12", "command": ["python", "-c", "print(1)"], "arguments": [],
        "environment": {}, "flavor": "cpu-basic", "timeoutSeconds": HF_DEFAULT_TIMEOUT_SECONDS,
        "attempts": 1, "labels": {}, "ssh": False, "tags": [],
    }
    assert secrets == {}


def test_a_full_spec_is_kept_and_secrets_are_set_apart():
    out, secrets = parse_job_spec(spec(
        arguments=["--x", "1"], environment={"A": "1", "N": 2, "B": True}, secrets={"HF_TOKEN": "hf_x"},
        flavor="t4-small", timeoutSeconds=600.0, attempts=3, labels={"tenant": "acme", "empty": ""},
        ssh={"enabled": True}, tags=["nightly"], arch="arm64"))
    assert out["arguments"] == ["--x", "1"]
    assert out["environment"] == {"A": "1", "N": "2", "B": "True"}
    assert secrets == {"HF_TOKEN": "hf_x"} and "secrets" not in out
    assert (out["flavor"], out["timeoutSeconds"], out["attempts"]) == ("t4-small", 600, 3)
    assert out["labels"] == {"tenant": "acme", "empty": ""}
    assert out["ssh"] is True and out["tags"] == ["nightly"]
    assert parse_job_spec(spec(ssh=True))[0]["ssh"] is True
    assert parse_job_spec(spec(flavor=""))[0]["flavor"] == "cpu-basic"
    assert parse_job_spec(spec(timeout=120))[0]["timeoutSeconds"] == 120  # the older field name


@pytest.mark.parametrize("arch", [None, "", "amd64", "x86_64", "arm64"])
def test_the_architectures_the_host_can_be(arch):
    assert parse_job_spec(spec(arch=arch))[0]["dockerImage"] == "python:3.12"


@pytest.mark.parametrize(("body", "message"), [
    ([1, 2], "the job spec must be a JSON object"),
    (spec(spaceId="user/space"), "Space images (spaceId) are not supported by the local Jobs server: "
                                 "use a Docker image name and a command"),
    (spec(arch="riscv"), "arch 'riscv' is not supported by the local Jobs server"),
    (spec(arch=5), "arch 5 is not supported by the local Jobs server"),
    (spec(command=[]), "command must be a non-empty list of strings"),
    (spec(command="python"), "command must be a non-empty list of strings"),
    (spec(command=["python", 3]), "command must be a list of strings"),
    (spec(command=["python", "a\0b"]), "command[1]: contains a NUL character"),
    (spec(arguments="--x"), "arguments must be a list of strings"),
    (spec(arguments=["ok", "\0"]), "arguments[1]: contains a NUL character"),
    (spec(dockerImage=...), "dockerImage is required (the local server records it but runs the command on the host)"),
    (spec(dockerImage=""), "dockerImage is required (the local server records it but runs the command on the host)"),
    (spec(dockerImage="py\0thon"), "dockerImage: contains a NUL character"),
    (spec(flavor=7), "flavor must be a flavor name (a string), not int"),
    (spec(attempts=0), "attempts must be a whole number from 1 to 10"),
    (spec(attempts=11), "attempts must be a whole number from 1 to 10"),
    (spec(attempts=True), "attempts must be a whole number from 1 to 10"),
    (spec(attempts=2.0), "attempts must be a whole number from 1 to 10"),
    (spec(environment=["A=1"]), "environment must be an object of string values"),
    (spec(environment={"A": None}), "environment.A: has no value"),
    (spec(environment={"A": [1]}), "environment.A: must be a string, not list"),
    (spec(environment={"A": "x\0"}), "environment.A: contains a NUL character"),
    (spec(environment={"1A": "x"}), "environment: '1A' is not a valid environment variable name "
                                    "(letters, digits and '_', not starting with a digit)"),
    (spec(secrets={"MY-TOKEN": "x"}), "secrets: 'MY-TOKEN' is not a valid environment variable name "
                                      "(letters, digits and '_', not starting with a digit)"),
    (spec(ssh="yes"), "ssh must be true or false"),
    (spec(ssh={"enabled": 1}), "ssh.enabled must be true or false"),
    (spec(timeoutSeconds="600"), "timeoutSeconds must be a number of seconds"),
    (spec(timeout=0), "timeout must be from 1 to 604800"),
])
def test_each_malformed_field_is_a_400_that_names_it(body, message):
    assert refused(body) == message


def test_an_unknown_flavor_lists_the_known_ones():
    message = refused(spec(flavor="h100-giant"))
    assert message.startswith("flavor: unknown flavor 'h100-giant'; known: t4-small, t4-medium, ")
    assert "cpu-basic" in message


def test_at_most_a_thousand_entries_in_each_list_and_object():
    ok = [str(i) for i in range(MAX_ENTRIES)]
    assert len(parse_job_spec(spec(arguments=ok))[0]["arguments"]) == MAX_ENTRIES
    assert refused(spec(arguments=[*ok, "x"])) == f"arguments: at most {MAX_ENTRIES} items"
    env = {f"V{i}": "x" for i in range(MAX_ENTRIES)}
    assert len(parse_job_spec(spec(environment=env))[0]["environment"]) == MAX_ENTRIES
    assert refused(spec(environment={**env, "W": "x"})) == f"environment: at most {MAX_ENTRIES} entries"
    tags = [f"t{i}" for i in range(MAX_ENTRIES)]
    assert parse_tags(tags) == tags
    with pytest.raises(ApiError, match=f"tags: at most {MAX_ENTRIES}"):
        parse_tags([*tags, "x"])


@pytest.mark.parametrize(("value", "expected"), [(None, HF_DEFAULT_TIMEOUT_SECONDS), (1, 1), (90.9, 90),
                                                 (MAX_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS)])
def test_a_timeout_is_whole_seconds_from_one_to_seven_days(value, expected):
    assert parse_timeout(value) == expected


@pytest.mark.parametrize(("value", "message"), [
    (True, "timeoutSeconds must be a number of seconds"),
    ("60", "timeoutSeconds must be a number of seconds"),
    (float("nan"), "timeoutSeconds must be a finite number of seconds, not nan"),
    (float("inf"), "timeoutSeconds must be a finite number of seconds, not inf"),
    (0, "timeoutSeconds must be from 1 to 604800"),
    (0.5, "timeoutSeconds must be from 1 to 604800"),
    (MAX_TIMEOUT_SECONDS + 1, "timeoutSeconds must be from 1 to 604800"),
    (-5, "timeoutSeconds must be from 1 to 604800"),
])
def test_a_timeout_out_of_range_or_not_a_number_is_refused(value, message):
    with pytest.raises(ApiError) as exc:
        parse_timeout(value)
    assert exc.value.status == 400 and exc.value.message == message


def test_flags_are_true_false_or_absent():
    assert parse_flag(None, "x") is False and parse_flag(None, "x", default=True) is True
    assert parse_flag(True, "x") is True and parse_flag(False, "x", default=True) is False
    with pytest.raises(ApiError, match="^x must be true or false$"):
        parse_flag(0, "x")


def test_labels_as_hf_accepts_them():
    assert parse_labels(None) == {}
    assert parse_labels({"a-b_C9": "v-1_X", "k": ""}) == {"a-b_C9": "v-1_X", "k": ""}
    assert parse_labels({"k" * 100: "v" * 100}) == {"k" * 100: "v" * 100}


@pytest.mark.parametrize(("labels", "message"), [
    ({"bad key": "v"}, f"labels: invalid key 'bad key': {RULE} (at least 1)"),
    ({"": "v"}, f"labels: invalid key '': {RULE} (at least 1)"),
    ({"k" * 101: "v"}, f"labels: invalid key '{'k' * 101}': {RULE} (at least 1)"),
    ({"env": "prod.eu"}, f"labels.env: invalid value 'prod.eu': {RULE}"),
    ({"name": "my job"}, f"labels.name: the job name 'my job': {RULE}"),
    ({"env": "v" * 101}, f"labels.env: invalid value '{'v' * 101}': {RULE}"),
    ({"env": 5}, "labels.env: must be a string, not int"),  # no numbers: 5 and "5" would both exist
    ({"env": "a\nb"}, f"labels.env: invalid value 'a\\nb': {RULE}"),
])
def test_labels_hf_would_refuse_are_a_400_naming_the_label(labels, message):
    with pytest.raises(ApiError) as exc:
        parse_labels(labels)
    assert exc.value.message == message


def test_tags_as_hf_accepts_them():
    assert parse_tags(None) == []
    assert parse_tags(["a", "b-c_1"]) == ["a", "b-c_1"]
    for bad, message in ((["a b"], f"tags: invalid tag 'a b': {RULE} (at least 1)"),
                         ([""], f"tags: invalid tag '': {RULE} (at least 1)"),
                         ("a", "tags must be a list of strings"), ([1], "tags must be a list of strings")):
        with pytest.raises(ApiError) as exc:
            parse_tags(bad)
        assert exc.value.message == message


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


def test_label_and_tag_refusals_are_400s():
    for call, value in ((parse_labels, {"bad key": "v"}), (parse_labels, {"k": "a b"}), (parse_tags, "a"),
                        (parse_tags, ["a b"]), (parse_tags, ["t"] * (MAX_ENTRIES + 1))):
        with pytest.raises(ApiError) as exc:
            call(value)
        assert exc.value.status == 400


def test_the_edges_of_what_a_spec_may_say():
    assert parse_job_spec(spec(attempts=10))[0]["attempts"] == 10
    assert parse_job_spec(spec(spaceId=""))[0]["dockerImage"] == "python:3.12"  # empty: no Space
    assert parse_job_spec(spec(spaceId=None))[0]["dockerImage"] == "python:3.12"
    assert parse_job_spec(spec(secrets={"SEED": 7, "ON": False}))[1] == {"SEED": "7", "ON": "False"}
    assert refused(spec(secrets={"HF_TOKEN": None})) == "secrets.HF_TOKEN: has no value"
    assert refused(spec(secrets="hf_x")) == "secrets must be an object of string values"


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
