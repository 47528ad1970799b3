"""The GPU-memory estimate behind every flavor fit: one file (training/jobkit/vram.py) that the
recipes run and the console loads, its numbers on known architectures, and the fit it gives.

The fit is a run's estimated GPU memory against its flavor's, not a fixed size limit per flavor
(the reference's "Fits (LoRA SFT)" column): it is checked when a run is estimated (`console whatif`)
and when it is submitted (`build_submission`), so an 8B model is refused a 16 GB t4-small.
"""

from __future__ import annotations

import pytest

from console import paths, vram
from console.costs import flavor_fits
from console.jobspec import SubmissionError, TrainingRequest, build_submission
from console.prices import SHIPPED_FLAVORS, shipped_price_book

LLAMA_31_8B = {
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "hidden_act": "silu",
    "tie_word_embeddings": False,
}  # fmt: skip
QWEN25_7B = {
    "model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "intermediate_size": 18944,
    "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "hidden_act": "silu",
    "tie_word_embeddings": False,
}  # fmt: skip
BERT_BASE = {
    "model_type": "bert", "hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072,
    "num_attention_heads": 12, "vocab_size": 30522, "hidden_act": "gelu", "max_position_embeddings": 512,
}  # fmt: skip
PRICES = shipped_price_book()


def test_the_console_loads_the_estimate_the_recipes_run():
    module = vram.estimator()
    assert module.__file__ == str(paths.training_dir() / "jobkit" / "vram.py")
    # the recipes' own flavor table is the price table's GPUs, flavor by flavor
    gpus = {f.name: (vram.gpu_count(f), f.gpu_memory_gb) for f in SHIPPED_FLAVORS if f.is_gpu}
    assert {name: (count, gb) for name, (count, _, gb) in module.FLAVOR_GPUS.items()} == gpus
    assert {name for name, (_, model, _) in module.FLAVOR_GPUS.items() if model == "T4"} == {"t4-small", "t4-medium"}


@pytest.mark.parametrize(
    ("config", "billions", "lora_r16"),
    [
        (LLAMA_31_8B, 8.03, 41_943_040),  # PEFT reports 41,943,040 trainable for r=16 all-linear
        (QWEN25_7B, 7.62, 40_370_176),
        (BERT_BASE, 0.1095, None),  # bert-base-uncased: 109,482,240
    ],
)
def test_parameters_come_from_config_json(config, billions, lora_r16):
    shape = vram.estimator().ModelShape.from_config(config)
    assert shape.params / 1e9 == pytest.approx(billions, rel=0.01)
    if lora_r16 is not None:
        assert shape.lora_params(16) == lora_r16


def test_what_the_estimate_counts_for_an_8b_model():
    v = vram.estimator()
    shape = v.ModelShape.from_config(LLAMA_31_8B)
    lora = v.estimate(shape, v.Setup(method="lora", dtype="bfloat16"))
    full = v.estimate(shape, v.Setup(method="full", dtype="bfloat16"))
    assert lora.weights / 1e9 == pytest.approx(16.06, abs=0.01)  # 2 bytes x 8.03B
    assert lora.optimizer == 41_943_040 * 16  # fp32 adapter + gradient + two AdamW moments
    assert full.optimizer == pytest.approx(shape.params * 6)  # bf16 gradient + two bf16 moments
    assert 24 < lora.total_gb < 30 and 70 < full.total_gb < 80
    # a 4-bit base (Unsloth) keeps the embeddings and the LM head in 16 bits
    quant = v.estimate(shape, v.Setup(dtype="4bit", unsloth=True))
    assert quant.weights / 1e9 == pytest.approx((shape.params - shape.embedding_params) * 0.5625 / 1e9 + 2.1, abs=0.05)
    # activations grow with the batch, and checkpointing keeps them small
    no_ckpt = v.estimate(shape, v.Setup(gradient_checkpointing=False))
    assert no_ckpt.activations > 10 * lora.activations


@pytest.mark.parametrize(
    ("model_b", "flavor", "fits"),
    [
        (8, "t4-small", False),  # 16 GB of bf16-less T4 cannot hold 16 GB of fp16 weights and more
        (3, "t4-small", True),  # the reference's §4(b) "3B LoRA on t4-small" row: ~15 GB in fp16
        (1, "t4-small", True),
        (7, "a100-large", True),  # the reference's builder model
        (13, "a10g-large", False),  # 26 GB of bf16 weights on a 24 GB A10G
        (70, "h200", False),  # 140 GB of weights and more on 141 GB
        (70, "a100x4", True),  # reference §3 "70B+" lines: the layers split over four 80 GB A100s
        (70, "h200x2", True),  # and over two 141 GB H200s
        (70, "a10g-largex4", False),  # ~49 GB per GPU on 24 GB A10Gs
    ],
)
def test_a_flavor_fits_a_model_by_its_gpu_memory(model_b, flavor, fits):
    assert flavor_fits(flavor, model_b) is fits


def test_a_multi_gpu_flavor_counts_every_gpu_lora_by_layers_and_a_full_fine_tune_sharded():
    """The busiest GPU's share: LoRA divides the weights and the adapters' state by the GPU count
    (device_map=auto); FSDP divides weights, gradients and AdamW state, and adds the gathered unit;
    the cheapest flavor of a 70B LoRA is a multi-GPU one."""
    one = vram.fit(vram.RunShape(70), PRICES.get("a100-large"))
    four = vram.fit(vram.RunShape(70), PRICES.get("a100x4"))
    assert not one.fits and four.fits and four.gpus == 4 and four.how() == "layers split over 4 GPUs (device_map=auto)"
    assert four.estimate.weights == pytest.approx(one.estimate.weights / 4)
    assert four.estimate.logits == one.estimate.logits  # the LM head's logits sit on one GPU
    full1 = vram.fit(vram.RunShape(7, method="full"), PRICES.get("a100-large"))
    full4 = vram.fit(vram.RunShape(7, method="full"), PRICES.get("a100x4"))
    assert full4.how() == "sharded over 4 GPUs (FSDP)"
    assert full4.estimate.optimizer == pytest.approx(full1.estimate.optimizer / 4)
    assert full4.estimate.weights > full1.estimate.weights / 4  # plus the gathered embeddings and layers
    assert full4.estimate.activations == full1.estimate.activations  # each GPU trains its own batch
    assert full4.needed_gb < full1.needed_gb / 2
    best = vram.cheapest_fit(vram.RunShape(70), PRICES)
    assert best is not None and best.flavor == "a100x4"  # $10/hr; h200 ($5) cannot hold 140 GB of weights
    assert "per GPU" in four.describe() and four.as_dict()["gpus"] == 4


def test_full_fine_tunes_and_unsloth_change_the_fit():
    assert flavor_fits("a100-large", 7, full=True) and not flavor_fits("l40sx1", 7, full=True)
    unsloth = vram.RunShape(8, unsloth=True)
    assert vram.fit(unsloth, PRICES.get("t4-small")).fits  # 4-bit: ~11 GB
    assert vram.cheapest_fit(vram.RunShape(8), PRICES).flavor == "l40sx1"
    assert vram.cheapest_fit(vram.RunShape(7, method="full"), PRICES).flavor == "a100-large"
    assert vram.cheapest_fit(vram.RunShape(400, method="full"), PRICES) is None


def test_an_8b_model_is_not_submitted_to_a_t4_small():
    req = TrainingRequest(tenant="acme", dataset="org/acme", model_b=8, flavor="t4-small")
    with pytest.raises(SubmissionError) as err:
        build_submission(req)
    assert str(err.value).startswith("LoRA of a 8B model needs ~26.9 GB of GPU memory (weights 16.0 + ")
    assert "but t4-small has 16 GB per GPU; the cheapest flavor that fits: l40sx1 (48 GB per GPU, $1.80/hr)" in str(
        err.value
    )
    assert build_submission(TrainingRequest(tenant="acme", dataset="org/acme", model_b=8, flavor="l40sx1"))
    assert build_submission(TrainingRequest(tenant="acme", dataset="org/acme", model_b=8, flavor="t4-small",
                                            unsloth=True))  # fmt: skip


def test_the_lora_above_7b_rule_is_one_number_on_both_sides():
    from console.prices import LORA_REQUIRED_ABOVE_B

    assert vram.estimator().LORA_REQUIRED_ABOVE_B == LORA_REQUIRED_ABOVE_B


@pytest.mark.parametrize(
    ("config", "billions"),
    [  # published sizes: Llama 2 13B, Qwen2.5 7B (q/k/v biases), Qwen3 0.6B (q/k norms, tied), Mistral 7B
        ({"model_type": "llama", "hidden_size": 5120, "num_hidden_layers": 40, "intermediate_size": 13824,
          "num_attention_heads": 40, "num_key_value_heads": 40, "vocab_size": 32000}, 13.016),
        ({"model_type": "qwen2", "hidden_size": 3584, "num_hidden_layers": 28, "intermediate_size": 18944,
          "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064}, 7.616),
        ({"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28, "intermediate_size": 3072,
          "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
          "tie_word_embeddings": True}, 0.596),
        ({"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 14336,
          "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000}, 7.242),
    ],
)
def test_a_config_json_is_counted_to_its_published_size_and_other_models_are_unknown(config, billions):
    v = vram.estimator()
    assert v.counted_params(config) / 1e9 == pytest.approx(billions, abs=0.001)
    assert v.counted_params({**config, "model_type": "gpt2"}) is None
    assert v.counted_params({**config, "num_local_experts": 8}) is None  # a mixture of experts: unknown
    assert v.counted_params({k: x for k, x in config.items() if k != "vocab_size"}) is None


def test_a_declared_size_agrees_within_the_rounding_of_model_names():
    v = vram.estimator()
    assert v.size_agrees(7, 7_615_616_512) and v.size_agrees(1, 1_235_814_400)  # Qwen2.5 "7B", Llama 3.2 "1B"
    assert not v.size_agrees(7, 8_030_261_248) and not v.size_agrees(7, 13_015_864_320)
    assert v.size_problem(7, 13_015_864_320, base="b", declared_as="model_b") is not None
    assert v.size_problem(7, 7_615_616_512, base="b", declared_as="model_b", full=True) is None  # a 7B: allowed
    assert v.size_problem(1, 100_000, base="b", declared_as="model_b") is None  # a toy stands in for its size
    assert v.size_problem(7, None, base="b", declared_as="model_b") is None  # unknown: the declared size stands
