"""One label rule (`console.labels`) for the console and its server: every run name, tenant label
or number label the console builds is one the server (HF's rule) takes, and the server's checks
and its OpenAPI description agree on every string."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from console import labels
from console.jobspec import label_value, number_label
from console.server.jobs.apidoc import openapi_doc
from console.server.jobs.schema import LabelsBody, decode
from console.server.jobs.wire import ApiError


def parse_labels(labels: dict) -> dict:
    return decode({"labels": labels}, LabelsBody).labels


@given(st.text(max_size=200))
def test_a_name_the_console_builds_is_a_label_the_server_takes(text):
    value = label_value(text)
    assert labels.is_name(value) or value == ""  # nothing left of a name of other characters
    assert parse_labels({"run": value}) == {"run": value}


@given(st.floats(min_value=0.001, max_value=2000, allow_nan=False))
def test_a_number_label_is_a_label(number):
    assert parse_labels({"model_b": number_label(number)})


def test_the_description_states_the_rule_the_server_checks():
    doc = openapi_doc("tester")["components"]["schemas"]
    labels_schema = doc["LabelsBody"]["properties"]["labels"]["anyOf"][0]
    assert labels_schema["propertyNames"]["pattern"] == labels.KEY_PATTERN
    assert labels_schema["additionalProperties"]["pattern"] == labels.VALUE_PATTERN


@given(st.text(alphabet=st.sampled_from("aZ09_-.\n /é"), max_size=120))
def test_the_server_and_its_openapi_description_agree(text):
    assert (labels.KEY_RE.match(text) is not None) == (re.search(labels.KEY_PATTERN.replace("$", r"\Z"), text)
                                                        is not None)
    assert (labels.VALUE_RE.match(text) is not None) == (re.search(labels.VALUE_PATTERN.replace("$", r"\Z"), text)
                                                          is not None)
    if text.endswith("\n"):
        assert labels.KEY_RE.match(text) is None  # a trailing newline is no label
    try:  # the server's schema checks the same rule
        taken = parse_labels({text: "v"}) == {text: "v"}
    except ApiError:
        taken = False
    assert taken == (labels.KEY_RE.match(text) is not None)
