"""`retry` and `retry_max_usd` in the fleet file and the submit form: read, checked, and carried in
the job's labels, so any console that watches acts the same on the same run."""

from __future__ import annotations

import pytest
from tests.fleet.test_fleet_file import write

from console import jobspec
from console.fleet import FleetFileError, load_fleet_file
from console.jobspec import SubmissionError
from console.ui.screens.submit import parse_retry, retry_text

FLEET = """\
base_model = "tiny-random"
model_b = 1.0
flavor = "t4-small"
epochs = 3
schedule = "0 3 * * 1"
retry = 2

[[tenant]]
id = "acme"
dataset = "data/acme.jsonl"
examples = 100
hub_model_id = "org/adapter-acme"
retry_max_usd = 4.5
{extra}
"""


def test_the_retry_policy_travels_from_the_fleet_file_to_the_job_labels(tmp_path):
    acme = load_fleet_file(write(tmp_path, FLEET.format(extra=""))).tenant("acme")
    assert (acme.retry, acme.retry_max_usd) == (2, 4.5)
    sub = jobspec.build_submission(acme.request("dev"), backend_kind="local")
    assert (sub.labels["retry"], sub.labels["retry_max_usd"]) == ("2", "4p5")
    assert "retry_of" not in sub.labels and "attempt" not in sub.labels


def test_bad_retry_settings_are_refused_with_the_field_named(tmp_path):
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(write(tmp_path, FLEET.format(extra="retry = 11")))
    assert "retry" in str(err.value) and "from 0 to 10" in str(err.value)
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(write(tmp_path, FLEET.replace('hub_model_id = "org/adapter-acme"', "").format(extra="")))
    assert "retry is for a tenant with a hub_model_id" in str(err.value)


def test_the_submit_form_reads_a_count_and_a_cap():
    assert parse_retry("") == (0, None) and parse_retry("2") == (2, None) and parse_retry("2 $5") == (2, 5.0)
    for bad in ("two", "2 $x", "11", "2 $5 more", "-1"):
        with pytest.raises(SubmissionError, match="retries: "):
            parse_retry(bad)
    req = jobspec.TrainingRequest(tenant="acme", dataset="d", retry=2, retry_max_usd=5.0)
    assert retry_text(req) == "2 $5" and parse_retry(retry_text(req)) == (2, 5.0)
