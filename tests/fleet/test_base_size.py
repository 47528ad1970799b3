"""The base model's real size, read from its `config.json` on the embedded server's local Hub
before anything is sent: a builder declaring 7B on a base whose config is a 13B Llama is refused
with both numbers (today's price of the mistake: a full fine-tune of 13B on h200x8), and a base
declared at its size goes through. The repo holds a config.json and nothing else: no weights."""

from __future__ import annotations

import json
import shutil

import pytest

from console import jobspec, paths
from console.backend import connect
from console.cli import main
from console.config import Config, save
from console.ship import BaseModelCheck

LLAMA_2_13B = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 5120, "num_hidden_layers": 40,
    "intermediate_size": 13824, "num_attention_heads": 40, "num_key_value_heads": 40, "vocab_size": 32000,
    "hidden_act": "silu", "tie_word_embeddings": False,
}  # fmt: skip
FLEET = """\
env = "prod"
schedule = "0 3 * * 1"
epochs = 3

[builder]
base_model = "{repo}"
model_b = {model_b}
flavor = "{flavor}"
full = {full}
dataset = "{dataset}"
examples = 3000
"""


@pytest.fixture
def server(tmp_path):
    cfg = Config(namespace="oncall")
    save(cfg)
    b = connect(cfg)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def base_13b(server):
    """A model repo on the local Hub holding a 13B Llama's config.json only."""
    repo = f"{server.namespace}/llama-2-13b"
    server.api.create_repo(repo, exist_ok=True)
    server.api.upload_file(path_or_fileobj=json.dumps(LLAMA_2_13B).encode(), path_in_repo="config.json",
                           repo_id=repo)
    return repo


def fleet(tmp_path, repo, *, model_b, flavor="h200x8", full="true", dataset="data/builder.jsonl"):
    (tmp_path / "data").mkdir(exist_ok=True)
    shutil.copy(paths.training_dir() / "data" / "builder.jsonl", tmp_path / "data")
    path = tmp_path / "fleet.toml"
    path.write_text(FLEET.format(repo=repo, model_b=model_b, flavor=flavor, full=full, dataset=dataset))
    return str(path)


def sent(server) -> tuple[list, list]:
    ns = server.namespace
    return list(server.api.list_scheduled_jobs(namespace=ns)), list(server.api.list_jobs(namespace=ns))


def test_a_13b_base_declared_as_7b_is_refused_with_both_numbers_before_anything_is_sent(
        server, base_13b, tmp_path, capsys):
    code = main(["fleet", "apply", "--no-preflight", fleet(tmp_path, base_13b, model_b=7)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code != 0, text
    assert f"base_model {base_13b} has 13.02B parameters by its config.json, but model_b declares 7B" in text
    assert "declare model_b = 13" in text and "a full fine-tune of it is refused" in text
    assert "nothing applied" in text
    assert sent(server) == ([], [])


def test_a_base_declared_at_its_size_goes_through_and_its_recipe_is_told_the_size(
        server, base_13b, tmp_path, capsys):
    code = main(["fleet", "apply", "--no-preflight", fleet(tmp_path, base_13b, model_b=13, flavor="a100-large",
                                                           full="false")])
    text = capsys.readouterr().out
    assert code == 0, text
    schedules, _ = sent(server)
    assert len(schedules) == 1
    command = jobspec.command_of(schedules[0])
    assert command[command.index("--model-b") + 1] == "13"  # the recipe checks the same size again


def test_the_fit_reads_the_real_shape_and_toy_or_unknown_bases_keep_their_declared_size(server, base_13b):
    check = BaseModelCheck(server.api, "local")
    assert check.size(base_13b).params == 13_015_864_320
    lora = jobspec.TrainingRequest(tenant="acme", dataset="d", base_model=base_13b, model_b=13, flavor="a10g-large")
    assert "LoRA of a 13B model needs ~" in check(lora) and "by the config.json of" in check(lora)
    assert check(jobspec.TrainingRequest(tenant="acme", dataset="d", base_model=base_13b, model_b=13,
                                         flavor="a100-large")) is None
    # a repo with no config.json, or none at all: unknown, the declared size stands
    missing = check.size(f"{server.namespace}/no-such-model")
    assert missing.params is None and missing.why_unknown
    assert check(jobspec.TrainingRequest(tenant="a", dataset="d", base_model=f"{server.namespace}/no-such-model",
                                         model_b=7, flavor="a100-large")) is None
    assert check.size("tiny-random") is None


@pytest.fixture
def hub_backend(monkeypatch):
    """The hub backend (huggingface_hub's own login) pointed at a strict embedded server, which
    answers as huggingface.co does."""
    from console.backend.server_info import forget_server_info, write_server_info
    from console.server import LocalServer, ServerOptions

    srv = LocalServer(ServerOptions(namespace="oncall", strict=True))
    srv.start()
    write_server_info(srv.url)
    monkeypatch.setenv("HF_TOKEN", srv.token)
    cfg = Config(namespace="oncall", backend="hub", endpoint=srv.url)
    save(cfg)
    backend = connect(cfg)
    try:
        yield backend
    finally:
        backend.close()
        forget_server_info(srv.url)
        srv.stop()


def test_on_the_hub_backend_the_same_base_is_refused_before_anything_is_sent(hub_backend, tmp_path, capsys):
    repo = "oncall/llama-2-13b"
    hub_backend.api.create_repo(repo, exist_ok=True)
    hub_backend.api.upload_file(path_or_fileobj=json.dumps(LLAMA_2_13B).encode(), path_in_repo="config.json",
                                repo_id=repo)
    path = fleet(tmp_path, repo, model_b=7, dataset="oncall/builder-traces")  # not read: --no-preflight
    with open(path, "a") as f:
        f.write('hub_model_id = "oncall/builder"\n')
    code = main(["fleet", "apply", "--no-preflight", path])
    text = "".join(capsys.readouterr())
    assert code != 0 and f"base_model {repo} has 13.02B parameters by its config.json, but model_b declares 7B" in text
    assert sent(hub_backend) == ([], [])
