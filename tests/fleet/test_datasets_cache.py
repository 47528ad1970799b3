"""A datasets cache on a /data volume (training reference: HF_DATASETS_CACHE=/data/datasets, so
each run does not download its dataset again): the config's `defaults.datasets_cache` or the fleet
file's `datasets_cache` mounts the bucket read-write at /data in every run of a Hub dataset; a Hub
run without one is offered it in its confirmation; `fleet apply` plans nothing for an unchanged
file and names the change when it moves."""

from __future__ import annotations

import dataclasses

import pytest

from console.cli import main
from console.config import Config, save
from console.jobspec import SubmissionError, TrainingRequest, build_submission, read_request

REQ = TrainingRequest(tenant="acme", dataset="org/acme-data", base_model="org/base", model_b=3, flavor="l4x1",
                      hub_model_id="org/adapter-acme")


def test_a_run_of_a_hub_dataset_mounts_its_cache_bucket_at_data():
    sub = build_submission(dataclasses.replace(REQ, datasets_cache="org/datasets-cache"), backend_kind="hub",
                           token="hf_x").mounted("org/jobs-artifacts")
    assert sub.env["HF_DATASETS_CACHE"] == "/data/datasets"
    volumes = [v.to_dict() for v in sub.run_kwargs()["volumes"]]
    assert volumes[1] == {"type": "bucket", "source": "org/datasets-cache", "mountPath": "/data", "readOnly": False}
    assert volumes[0]["mountPath"] == "/console-training"  # the shipped recipe, as before
    assert not any("datasets_cache" in w or "downloads" in w for w in sub.warnings)
    # without a cache: the same run's fingerprint differs (a fleet sees the change)
    plain = build_submission(REQ, backend_kind="hub", token="hf_x")
    assert plain.fingerprint() != sub.fingerprint() and "HF_DATASETS_CACHE" not in plain.env


def test_a_hub_run_without_a_cache_is_offered_one_and_a_local_file_needs_none():
    plain = build_submission(REQ, backend_kind="hub", token="hf_x")
    [tip] = [w for w in plain.warnings if "downloads" in w]
    assert tip.startswith("each run downloads its Hub dataset again") and "defaults.datasets_cache" in tip
    assert "HF_DATASETS_CACHE=/data/datasets" in tip
    assert not [w for w in build_submission(REQ, backend_kind="local").warnings if "downloads" in w]
    local = build_submission(dataclasses.replace(REQ, dataset="/data/acme.jsonl", datasets_cache="org/cache"))
    assert local.volumes == () and "HF_DATASETS_CACHE" not in local.env  # nothing to download


@pytest.mark.parametrize("bad", ["no-slash", "org/../x", "org/a b", "/org/x"])
def test_a_cache_that_is_not_a_bucket_id_is_refused(bad):
    with pytest.raises(SubmissionError, match=f"datasets_cache {bad!r} is not a bucket id like org/datasets-cache"):
        build_submission(dataclasses.replace(REQ, datasets_cache=bad))


def test_config_set_refuses_a_bad_bucket_and_keeps_a_good_one(capsys):
    assert main(["config", "set", "defaults.datasets_cache", "nope"]) == 2
    assert "a bucket id like 'org/datasets-cache'" in capsys.readouterr().err
    assert main(["config", "set", "defaults.datasets_cache", "acme-org/datasets-cache"]) == 0
    assert main(["config", "show"]) == 0
    assert 'datasets_cache = "acme-org/datasets-cache"' in capsys.readouterr().out


FLEET = (
    'env = "dev"\nbase_model = "tiny-random"\nmodel_b = 0.5\nflavor = "t4-small"\nepochs = 1\n'
    'schedule = "@weekly"\n{cache}'
    '[[tenant]]\nid = "acme"\ndataset = "acme-org/acme"\nexamples = 100\n'
)


def test_fleet_apply_keeps_the_cache_and_plans_nothing_until_it_changes(tmp_path, capsys):
    from console.backend import connect

    path = tmp_path / "fleet.toml"
    path.write_text(FLEET.format(cache='datasets_cache = "acme-org/datasets-cache"\n'))
    save(Config(namespace="acme-org"))
    with connect(Config(namespace="acme-org")) as backend:
        assert main(["fleet", "apply", str(path), "--no-preflight"]) == 0
        [sj] = backend.api.list_scheduled_jobs(namespace=backend.namespace)
        assert read_request(sj).datasets_cache == "acme-org/datasets-cache"
        assert sj.job_spec.environment["HF_DATASETS_CACHE"] == "/data/datasets"
        assert "acme-org/datasets-cache" in [b.id for b in backend.api.list_buckets(namespace="acme-org")]
        capsys.readouterr()
        assert main(["fleet", "apply", str(path), "--dry-run"]) == 0
        assert "Nothing to do: the scheduled jobs match the fleet file." in capsys.readouterr().out

        path.write_text(FLEET.format(cache='datasets_cache = "acme-org/other-cache"\n'))
        assert main(["fleet", "apply", str(path), "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert "datasets cache 'acme-org/datasets-cache' -> 'acme-org/other-cache'" in out, out
