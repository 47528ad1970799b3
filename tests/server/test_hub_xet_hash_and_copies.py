"""A Xet-stored file's `xetHash` in tree and paths-info entries, as the Hub gives it, and what the
client does with it: `copy_files` between repos and into a bucket, and `snapshot_download` without
a HEAD per Xet file."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url, snapshot_download
from huggingface_hub.hf_api import RepoFile
from jobs_helpers import NAMESPACE

SRC = f"{NAMESPACE}/copy-source"
DST = f"{NAMESPACE}/copy-target"


def _seed(api: HfApi) -> bytes:
    weights = os.urandom(300 * 1024)
    api.create_repo(SRC)
    api.upload_file(path_or_fileobj=weights, path_in_repo="sub/w.safetensors", repo_id=SRC)
    api.upload_file(path_or_fileobj=b'{"hidden": 8}', path_in_repo="sub/config.json", repo_id=SRC)
    return weights


def test_tree_and_paths_info_carry_the_xet_hash_of_a_xet_file(server, api: HfApi) -> None:
    _seed(api)
    meta = get_hf_file_metadata(hf_hub_url(SRC, "sub/w.safetensors", endpoint=server.url), token=server.token)
    assert meta.xet_file_data is not None
    tree = {f.path: f for f in api.list_repo_tree(SRC, recursive=True) if isinstance(f, RepoFile)}
    assert tree["sub/w.safetensors"].xet_hash == meta.xet_file_data.file_hash
    assert tree["sub/config.json"].xet_hash is None  # a regular file has none
    (info,) = api.get_paths_info(SRC, ["sub/w.safetensors"])
    assert info.xet_hash == meta.xet_file_data.file_hash
    # without a token, no Xet hash (the CAS tokens here are not per repo): the bytes come over HTTP
    anon = httpx.get(f"{server.url}/api/models/{SRC}/tree/main/sub").json()
    assert anon and all("xetHash" not in item for item in anon)


def test_copy_files_between_repos_and_into_a_bucket(server, api: HfApi, tmp_path: Path) -> None:
    weights = _seed(api)
    api.create_repo(DST, repo_type="dataset")
    api.copy_files(f"hf://{SRC}/sub/", f"hf://datasets/{DST}/copied/")
    assert sorted(api.list_repo_files(DST, repo_type="dataset")) == [
        ".gitattributes", "copied/config.json", "copied/w.safetensors"]
    got = snapshot_download(DST, repo_type="dataset", endpoint=server.url, token=server.token,
                            cache_dir=tmp_path / "cache")
    assert (Path(got) / "copied" / "w.safetensors").read_bytes() == weights
    assert (Path(got) / "copied" / "config.json").read_bytes() == b'{"hidden": 8}'
    # into a bucket, by the same hashes
    api.create_bucket(f"{NAMESPACE}/copies")
    api.copy_files(f"hf://{SRC}/sub/w.safetensors", f"hf://buckets/{NAMESPACE}/copies/w.safetensors")
    assert [f.path for f in api.list_bucket_tree(f"{NAMESPACE}/copies")] == ["w.safetensors"]


def test_a_duplicate_of_a_file_this_server_does_not_hold_is_listed_as_failed(server, api: HfApi) -> None:
    _seed(api)
    api.create_repo(DST)
    answer = httpx.post(f"{server.url}/api/models/{SRC}/lfs-files/duplicate",
                        headers={"authorization": f"Bearer {server.token}"},
                        json={"target": {"type": "model", "name": DST},
                              "files": [{"sha256": "e" * 64, "xetHash": "f" * 64, "filename": "x.bin"}]})
    assert answer.status_code == 200 and [f["sha256"] for f in answer.json()["failed"]] == ["e" * 64]


CARD = """---
license: apache-2.0
library_name: peft
base_model: console/tiny-causal-lm
datasets:
- tester/tenant-a
tags:
- lora
- tenant-a
pipeline_tag: text-generation
trained: 2026-12-01
---
# An adapter
"""


def test_model_info_carries_the_cards_tags_library_name_and_card_data(server, api: HfApi) -> None:
    api.create_repo(SRC)
    assert api.model_info(SRC).tags == [] and api.model_info(SRC).card_data is None
    api.upload_file(path_or_fileobj=CARD.encode(), path_in_repo="README.md", repo_id=SRC)
    info = api.model_info(SRC)
    assert info.library_name == "peft" and info.pipeline_tag == "text-generation"
    assert info.tags == ["lora", "tenant-a", "peft", "license:apache-2.0", "dataset:tester/tenant-a",
                         "base_model:console/tiny-causal-lm"]
    assert info.card_data["license"] == "apache-2.0" and info.card_data["trained"] == "2026-12-01"
    assert info.card_data["base_model"] == "console/tiny-causal-lm"


def test_snapshot_download_sends_no_head_for_a_xet_file(server, api: HfApi, tmp_path: Path) -> None:
    from unittest.mock import patch

    from huggingface_hub.utils import _http

    weights = _seed(api)
    session = _http.get_session()
    with patch.object(session, "request", wraps=session.request) as spy:
        got = snapshot_download(SRC, endpoint=server.url, token=server.token, cache_dir=tmp_path / "c", max_workers=1)
    heads = [str(c.kwargs["url"]) for c in spy.call_args_list if c.kwargs.get("method") == "HEAD"]
    assert any(url.endswith("/sub/config.json") for url in heads)  # a regular file is asked for
    assert not any(url.endswith("/sub/w.safetensors") for url in heads), heads  # a Xet file is not
    assert (Path(got) / "sub" / "w.safetensors").read_bytes() == weights


def test_list_models_carries_each_cards_tags_and_library_name(server, api: HfApi) -> None:
    """As huggingface.co lists models: each with its card's tags, `library_name` and `pipeline_tag`
    (the card data itself is `model_info`'s)."""
    api.create_repo(SRC)
    api.create_repo(DST)
    api.upload_file(path_or_fileobj=CARD.encode(), path_in_repo="README.md", repo_id=SRC)
    listed = {m.id: m for m in api.list_models(author=NAMESPACE)}
    assert listed[SRC].library_name == "peft" and listed[SRC].pipeline_tag == "text-generation"
    assert listed[SRC].tags == ["lora", "tenant-a", "peft", "license:apache-2.0", "dataset:tester/tenant-a",
                                "base_model:console/tiny-causal-lm"]
    assert listed[DST].tags == [] and listed[DST].library_name is None
