"""Every training kind, end to end through the console's own data: the recipe and arguments a
submission runs, what reads back from HF Jobs, the fleet file's `method` and `[builder]`, the fleet
rows and what the scheduled fleet costs per month, with the builder model as its own row."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime

import pytest
from huggingface_hub._jobs_api import ScheduledJobInfo

from console import jobspec, paths
from console.costs import RunSpec, estimate_run
from console.cron import runs_per_month
from console.fleet import FleetFileError, derive_fleet, load_fleet_file
from console.jobspec import SubmissionError, TrainingRequest, build_submission, read_request, script_args_of
from console.ledger import fleet_costs

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
BASE = dict(tenant="hooli", dataset="org/hooli-prefs", base_model="org/base", model_b=3, examples=1000,
            epochs=3, flavor="l4x1", env="prod", max_steps=50, learning_rate=5e-5, lora_r=8)  # fmt: skip


def as_scheduled(sub: jobspec.Submission, schedule: str = "0 3 * * 1", sj_id: str = "sj1") -> ScheduledJobInfo:
    """What HF returns for a scheduled job made from `sub` (through huggingface_hub's own parser)."""
    return ScheduledJobInfo(
        id=sj_id,
        createdAt="2026-12-01T10:00:00.000Z",
        jobSpec={"dockerImage": sub.image, "command": sub.command, "environment": sub.env, "flavor": sub.flavor,
                 "timeout": sub.timeout_seconds, "labels": sub.labels},
        schedule=schedule,
        suspend=False,
        concurrency=False,
        status={"lastJob": None, "nextJobRunAt": None},
        owner={"id": "0123456789abcdef01234567", "name": "ops", "type": "user"},
    )  # fmt: skip


def args_of(sub: jobspec.Submission) -> list[str]:
    return script_args_of(sub.command)


def test_an_sft_run_keeps_the_arguments_it_always_had():
    """A fleet's existing SFT schedules must keep their fingerprints: no new flag for them."""
    req = TrainingRequest(**{**BASE, "tenant": "acme", "dataset": "org/acme", "run_name": "acme-1"})
    sub = build_submission(req)
    assert sub.command[2] == f"{jobspec.TRAINING_MOUNT}/sft_lora.py"
    assert args_of(sub) == [
        "--base-model", "org/base", "--dataset", "org/acme", "--epochs", "3", "--max-steps", "50",
        "--learning-rate", "5e-05", "--lora-r", "8", "--run-name", "acme-1",
    ]  # fmt: skip
    assert "full" not in sub.labels and "encoder" not in sub.labels


@pytest.mark.parametrize(
    ("changes", "script", "expected_args", "absent"),
    [
        ({"kind": "dpo"}, "dpo_lora.py", ["--lora-r", "8"], ["--kind", "--full"]),
        ({"kind": "kto"}, "kto_lora.py", ["--lora-r", "8"], ["--kind"]),
        ({"kind": "grpo", "rewards": "numeric,mine.py"}, "grpo_lora.py", ["--rewards", "numeric,mine.py", "--lora-r"],
         ["--kind"]),
        ({"kind": "reward"}, "reward_lora.py", ["--lora-r", "8"], ["--kind", "--rewards"]),
        ({"kind": "embedding", "encoder": "cross", "model_b": 0.1}, "sentence_transformer.py",
         ["--kind", "cross"], ["--lora-r", "--flavor"]),
        ({"kind": "builder", "tenant": "builder", "full": True, "model_b": 7, "flavor": "a100-large"},
         "sft_lora.py", ["--full", "--flavor", "a100-large"], ["--kind"]),
        ({"kind": "builder", "tenant": "builder", "model_b": 7, "flavor": "a100-large", "unsloth": True},
         "sft_lora.py", ["--flavor", "a100-large", "--unsloth"], ["--full"]),
    ],
)
def test_each_kind_runs_its_recipe_and_reads_back_as_it_was_asked(changes, script, expected_args, absent):
    req = TrainingRequest(**{**BASE, "hub_model_id": "org/model-x", **changes})
    sub = build_submission(req, backend_kind="hub", token="hf_x", script_dir=paths.training_dir())
    assert f"{jobspec.TRAINING_MOUNT}/{script}" in sub.command
    assert set(dict(sub.ships)) >= {script, "jobkit/vram.py", "jobkit/recipe.py"}
    args = args_of(sub)
    assert all(a in args for a in expected_args) and not any(a in args for a in absent)
    assert (sub.command[:4] == ["uv", "run", "--with", "unsloth"]) is req.unsloth  # not in the header
    assert sub.labels["kind"] == req.kind
    back = read_request(as_scheduled(sub))
    assert (back.kind, back.full, back.encoder, back.unsloth) == (req.kind, req.full, req.encoder, req.unsloth)
    assert back.rewards == req.rewards
    assert (back.model_b, back.flavor, back.dataset) == (req.model_b, req.flavor, req.dataset)


@pytest.mark.parametrize(("kind", "method"), [("sft", "sft"), ("builder", "sft"), ("dpo", "dpo"),
                                              ("kto", "kto"), ("grpo", "grpo"), ("reward", "reward"),
                                              ("embedding", "embedding")])  # fmt: skip
def test_a_dataset_check_checks_for_the_method_of_the_run_it_precedes(kind, method):
    check = jobspec.preflight_request(TrainingRequest(**{**BASE, "kind": kind, "model_b": 1}))
    sub = build_submission(check)
    assert sub.command[2].endswith("validate_dataset.py") and sub.flavor == "cpu-basic"
    assert args_of(sub) == ["org/hooli-prefs", "--method", method]
    assert read_request(as_scheduled(sub)).validates == method


def test_a_grpo_example_costs_eight_sft_examples_and_says_so():
    """A GRPO prompt is sampled 4 times, each completion generated and then trained on (x2): the
    estimate counts 8 SFT examples' time per prompt, and with max_steps 2 per completion of its batch."""
    sft = TrainingRequest(**{**BASE, "max_steps": None, "kind": "dpo"}).run_spec()
    grpo = TrainingRequest(**{**BASE, "max_steps": None, "kind": "grpo"}).run_spec()
    assert estimate_run(grpo).hours == pytest.approx(8 * estimate_run(sft).hours)
    stepped = TrainingRequest(**{**BASE, "kind": "grpo"}).run_spec()  # 50 steps of 8 completions
    assert stepped.work() == 50 * 8 * 2 and sft.work() == 3000
    sub = build_submission(TrainingRequest(**{**BASE, "max_steps": None, "kind": "grpo"}))
    assert sub.estimate_hours == pytest.approx(estimate_run(grpo).hours)
    # the month's projection reads the kind from the schedule's labels: the same factor
    monthly = {kind: fleet_costs([as_scheduled(build_submission(TrainingRequest(**{**BASE, "max_steps": None,
                                                                                     "kind": kind})))]).tenants_usd
               for kind in ("dpo", "grpo")}
    assert monthly["grpo"] == pytest.approx(8 * monthly["dpo"])


def test_what_a_kind_cannot_ask_for_is_refused():
    with pytest.raises(SubmissionError, match="a full fine-tune is the builder model's"):
        build_submission(TrainingRequest(**{**BASE, "full": True}))
    with pytest.raises(SubmissionError, match="encoder must be one of bi, cross, sparse"):
        build_submission(TrainingRequest(**{**BASE, "kind": "embedding", "encoder": "dual"}))
    with pytest.raises(SubmissionError, match="kind must be one of sft, dpo, kto, grpo, reward, embedding, builder, "
                                              "validate"):
        build_submission(TrainingRequest(**{**BASE, "kind": "ppo"}))
    with pytest.raises(SubmissionError, match="rewards are for kind grpo"):
        build_submission(TrainingRequest(**{**BASE, "kind": "dpo", "rewards": "exact"}))
    with pytest.raises(SubmissionError, match="reward 'os.system' must be one of exact, numeric, format"):
        build_submission(TrainingRequest(**{**BASE, "kind": "grpo", "rewards": "exact,os.system"}))
    with pytest.raises(SubmissionError, match="unsloth is for kinds sft, dpo, kto, builder, not reward"):
        build_submission(TrainingRequest(**{**BASE, "kind": "reward", "unsloth": True}))
    # the builder's full fine-tune of 7B needs ~69 GB: refused on a 24 GB GPU, naming the one that fits
    with pytest.raises(SubmissionError) as err:
        build_submission(TrainingRequest(**{**BASE, "kind": "builder", "full": True, "model_b": 7,
                                            "flavor": "a10g-large"}))  # fmt: skip
    assert "a full fine-tune of a 7B model needs ~69.1 GB" in str(err.value)
    assert "the cheapest flavor that fits: a100-large" in str(err.value)
    # reference §2: LoRA for models over 7B, the builder's too
    with pytest.raises(SubmissionError, match=r"a full fine-tune of a 13B model is refused: the reference "
                                              r"mandates LoRA for models over 7B \(§2\)"):
        build_submission(TrainingRequest(**{**BASE, "kind": "builder", "full": True, "model_b": 13,
                                            "flavor": "h200"}))  # fmt: skip
    lora = build_submission(TrainingRequest(**{**BASE, "kind": "builder", "model_b": 13, "flavor": "a100-large"}))
    assert lora.labels["kind"] == "builder" and "full" not in lora.labels


FLEET = """
    env = "prod"
    base_model = "Qwen/Qwen2.5-3B-Instruct"
    model_b = 3
    flavor = "l4x1"
    epochs = 3
    examples = 1000
    schedule = "0 3 * * 1"

    [[tenant]]
    id = "acme"
    dataset = "acme.jsonl"

    [[tenant]]
    id = "hooli"
    kind = "dpo"
    dataset = "hooli.jsonl"

    [[tenant]]
    id = "stark"
    method = "embedding"  # the older name of kind, still read
    encoder = "sparse"
    base_model = "org/splade-base"
    model_b = 0.11
    dataset = "stark.jsonl"

    [builder]
    base_model = "Qwen/Qwen2.5-7B"
    model_b = 7
    flavor = "a100-large"
    examples = 3000
    full = true
    dataset = "builder.jsonl"
    schedule = "0 2 1 * *"
"""


@pytest.fixture
def fleet_path(tmp_path):
    for name in ("acme", "hooli", "stark", "builder"):
        (tmp_path / f"{name}.jsonl").write_text("{}\n")
    path = tmp_path / "fleet.toml"
    path.write_text(textwrap.dedent(FLEET))
    return path


def test_the_fleet_file_says_each_tenants_kind_and_the_builder(fleet_path):
    fleet = load_fleet_file(fleet_path)
    kinds = {t.id: (t.kind, t.encoder, t.full) for t in fleet.tenants}
    assert kinds == {"acme": ("sft", None, False), "hooli": ("dpo", None, False),
                     "stark": ("embedding", "sparse", False), "builder": ("builder", None, True)}  # fmt: skip
    builder = fleet.builder
    assert (builder.model_b, builder.flavor, builder.examples, builder.schedule) == (7, "a100-large", 3000, "0 2 1 * *")
    assert builder.epochs == 3  # from the top-level defaults
    req = builder.request("prod")
    assert (req.kind, req.full, req.tenant) == ("builder", True, "builder")


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (('kind = "dpo"', 'kind = "ppo"'),
         "tenant 'hooli': kind 'ppo' must be one of sft, dpo, kto, grpo, reward, embedding"),
        (('method = "embedding"', 'method = "embeding"'),
         "tenant 'stark': method 'embeding' must be one of sft, dpo, kto, grpo, reward, embedding"),
        (('kind = "dpo"', 'kind = "dpo"\nmethod = "dpo"'),
         "tenant 'hooli': kind and method are one setting (method is its older name): keep kind"),
        (('encoder = "sparse"', 'encoder = "dual"'), "tenant 'stark': encoder 'dual' must be one of bi, cross, sparse"),
        (('flavor = "a100-large"', 'flavor = "a10g-large"'),
         "builder 'builder': a 7B model does not fit a10g-large: a full fine-tune of a 7B model needs ~69.1 GB"),
        (('base_model = "Qwen/Qwen2.5-7B"\n', ""), "builder 'builder': base_model is required in [builder]"),
        (('full = true', 'full = true\nmethod = "dpo"'), "builder 'builder': unknown key 'method'"),
        (('id = "acme"', 'id = "acme"\nmodel_b = 13\nflavor = "a10g-large"'),
         "tenant 'acme': a 13B model does not fit a10g-large: LoRA of a 13B model needs ~38.9 GB"),
    ],
)
def test_fleet_file_mistakes_are_named(fleet_path, edit, problem):
    text = fleet_path.read_text()
    assert edit[0] in text
    fleet_path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(FleetFileError) as err:
        load_fleet_file(fleet_path)
    assert any(p.startswith(problem) for p in err.value.problems), err.value.problems


def test_the_fleet_has_a_row_per_kind_and_the_builder_is_its_own_row_costed_at_its_size(fleet_path):
    fleet = load_fleet_file(fleet_path)
    scheduled = [
        as_scheduled(build_submission(t.request(fleet.env)), t.schedule, sj_id=f"sj-{t.id}") for t in fleet.tenants
    ]
    rows = derive_fleet(scheduled, [], now=NOW)
    assert [(r.tenant, r.kind) for r in rows] == [
        ("acme", "sft"), ("hooli", "dpo"), ("stark", "embedding"), ("builder", "builder"),
    ]  # the builder after the tenants
    builder = rows[-1]
    assert builder.is_builder and builder.kind_label == "builder model"
    own = estimate_run(RunSpec(7, 3000, 3, "a100-large")).cost_usd  # reference §4(a): ~$11 a run
    assert builder.cost_per_run == pytest.approx(own) and round(own) == 11
    assert builder.monthly_usd == pytest.approx(own * runs_per_month("0 2 1 * *"))  # monthly cadence

    costs = fleet_costs(scheduled)
    assert costs.tenants == 3 and costs.builder_schedules == 1
    assert costs.builder_usd == pytest.approx(builder.monthly_usd)
    assert costs.tenants_usd == pytest.approx(sum(r.monthly_usd for r in rows[:-1]))
    scenario = costs.representative
    assert scenario.builder == RunSpec(7, 3000, 3, "a100-large", False, kind="builder")
    assert scenario.builder_cadence == "0 2 1 * *"
    assert scenario.run.model_b == 3  # the tenants' median, not pulled by the builder


def test_a_run_that_saved_a_whole_model_says_where_in_its_outcome():
    from console.fleet import parse_outcome

    lines = [
        "plan run=builder-1 method=sft base_model=Qwen/Qwen2.5-7B training=full",
        "saved model=hf://acme-corp/builder",
        "VERDICT: PASS run=builder-1 steps=90 first_loss=2.1 last_loss=1.2 model=hf://acme-corp/builder",
    ]
    out = parse_outcome(lines)
    assert (out.passed, out.adapter, out.last_loss) == (True, "hf://acme-corp/builder", 1.2)
    embed = parse_outcome(["VERDICT: PASS run=s steps=20 first_loss=3.4 last_loss=0.5 metric=heldout_cosine_ndcg@10 "
                           "metric_first=0.07 metric_last=0.85 model=/art/s"])  # fmt: skip
    assert embed.adapter == "/art/s"
