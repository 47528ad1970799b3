"""`console fleet apply`'s plan, rule by rule, against schedules as the server lists them.

Each test starts from what a previous apply left on the server (the schedules the same file would
create), edits the fleet file the way an operator does, and checks the plan's lines and what
applying it asks of the Jobs API (a recording stand-in for HfApi, local backend: nothing to ship).
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from console import jobspec, paths
from console.fleet.apply import (
    ApplyPlan,
    PlanRefused,
    ReplaceIncomplete,
    apply_plan,
    desired_submission,
    plan_apply,
)
from console.fleet.file import parse_fleet
from console.prices import shipped_price_book

FLEET = {
    "base_model": "tiny-random",
    "model_b": 1.0,
    "flavor": "t4-small",
    "epochs": 3,
    "schedule": "0 3 * * 1",
    "env": "prod",
    "tenant": [
        {"id": "acme", "dataset": "data/acme.jsonl", "examples": 300, "max_steps": 10},
        {"id": "globex", "dataset": "data/globex.jsonl", "examples": 250, "schedule": "30 3 * * 1"},
    ],
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    for name in ("acme", "globex"):
        shutil.copy(paths.training_dir() / "data" / f"{name}.jsonl", tmp_path / "data")
    shutil.copy(tmp_path / "data" / "acme.jsonl", tmp_path / "data" / "acme-v2.jsonl")
    return tmp_path


def fleet(folder: Path, **changes):
    doc = {**FLEET, "tenant": [dict(t) for t in FLEET["tenant"]]}
    for key, value in changes.items():
        tenant, _, field = key.partition("__")
        if field:
            for t in doc["tenant"]:
                if t["id"] == tenant:
                    if value is None:
                        t.pop(field, None)
                    else:
                        t[field] = value
        else:
            doc[key] = value
    return parse_fleet(doc, folder / "fleet.toml")


def as_listed(sub, *, id: str, schedule: str, suspend: bool = False, timeout="same", labels=None):
    """A scheduled job as the server lists it after applying `sub`."""
    spec = SimpleNamespace(
        labels=dict(labels if labels is not None else sub.labels),
        command=list(sub.command),
        arguments=[],
        environment=dict(sub.env),
        timeout=sub.timeout_seconds if timeout == "same" else timeout,
        flavor=sub.flavor,
        image=sub.image,
    )
    return SimpleNamespace(id=id, schedule=schedule, suspend=suspend, job_spec=spec)


def applied(f, **overrides) -> list:
    """The schedules an apply of `f` left on the server (ids sj-<tenant>)."""
    out = []
    for t in f.tenants:
        sub = desired_submission(t, f, backend_kind="local", timeout_buffer=1.3)
        out.append(as_listed(sub, id=f"sj-{t.id}", schedule=t.schedule, suspend=t.suspend,
                             **overrides.get(t.id, {})))
    return out


class Api:
    """Records each call of the Jobs API the apply makes; inspect answers from `listed`. Every
    call must be in the namespace the apply was given (`oncall`)."""

    def __init__(self, listed=(), fail_delete: Exception | None = None, namespace: str = "oncall") -> None:
        self.calls: list[tuple] = []
        self.created_kwargs: list[dict] = []
        self.listed = {sj.id: sj for sj in listed}
        self.fail_delete = fail_delete
        self.namespace = namespace
        self.created = 0
        self.endpoint = f"https://hub.test/{uuid.uuid4().hex}"  # its own upload cache
        self.buckets: list[tuple] = []

    def _in(self, namespace) -> None:
        assert namespace == self.namespace, f"called in namespace {namespace!r}"

    def create_scheduled_job(self, *, namespace=None, **kw):
        self._in(namespace)
        self.created += 1
        self.created_kwargs.append(kw)
        self.calls.append(("create", kw["schedule"], kw.get("suspend", False), kw["flavor"]))
        return SimpleNamespace(id=f"new-{self.created}")

    def delete_scheduled_job(self, *, scheduled_job_id, namespace=None):
        self._in(namespace)
        if self.fail_delete is not None:
            raise self.fail_delete
        self.calls.append(("delete", scheduled_job_id))

    def inspect_scheduled_job(self, *, scheduled_job_id, namespace=None):
        self._in(namespace)
        return self.listed[scheduled_job_id]

    def update_scheduled_job_schedule(self, *, scheduled_job_id, schedule, namespace=None):
        self._in(namespace)
        self.calls.append(("reschedule", scheduled_job_id, schedule))

    def suspend_scheduled_job(self, *, scheduled_job_id, namespace=None):
        self._in(namespace)
        self.calls.append(("suspend", scheduled_job_id))

    def resume_scheduled_job(self, *, scheduled_job_id, namespace=None):
        self._in(namespace)
        self.calls.append(("resume", scheduled_job_id))

    def create_bucket(self, bucket, **kw):
        self.buckets.append(("create", bucket))

    def batch_bucket_files(self, bucket, add=()):
        self.buckets.append(("upload", bucket, sorted(name for _, name in add)))


def test_a_first_apply_creates_every_tenant_and_says_what_each_costs(folder):
    f = fleet(folder)
    plan = plan_apply(f, [])
    assert [(a.op, a.tenant, a.schedule) for a in plan.actions] == [
        ("create", "acme", "0 3 * * 1"), ("create", "globex", "30 3 * * 1")]
    lines = plan.lines()
    assert lines[0].startswith("+ create  acme: 0 3 * * 1 on t4-small, timeout ")
    assert "/run" in lines[0] and "~$" in lines[0]
    assert lines[-1] == "Plan (env=prod): 2 to create, 0 to change, 0 to remove, 0 unchanged."
    api = Api()
    done = apply_plan(api, plan, namespace="oncall")
    assert api.calls == [("create", "0 3 * * 1", False, "t4-small"), ("create", "30 3 * * 1", False, "t4-small")]
    assert done == ["created acme (new-1)", "created globex (new-2)"]


def test_the_same_file_again_is_nothing_to_do(folder):
    f = fleet(folder)
    plan = plan_apply(f, applied(f))
    assert plan.empty and plan.actions == []
    assert plan.unchanged == ["acme", "globex"]
    assert plan.lines() == ["Plan (env=prod): 0 to create, 0 to change, 0 to remove, 2 unchanged."]
    assert apply_plan(Api(), plan, namespace="oncall") == []


def test_a_new_schedule_alone_is_changed_in_place(folder):
    before = fleet(folder)
    f = fleet(folder, globex__schedule="0 6 * * 2")
    plan = plan_apply(f, applied(before))
    (action,) = plan.actions
    assert action.op == "change" and action.tenant == "globex" and action.schedule_only
    assert action.changes == ["schedule '30 3 * * 1' -> '0 6 * * 2'"]
    assert action.describe() == "~ change  globex (sj-globex): schedule '30 3 * * 1' -> '0 6 * * 2'"
    api = Api(applied(before))
    done = apply_plan(api, plan, namespace="oncall")
    assert api.calls == [("reschedule", "sj-globex", "0 6 * * 2")]  # no new job, no delete
    assert done == ["changed globex (sj-globex): schedule '30 3 * * 1' -> '0 6 * * 2'"]


def test_a_schedule_written_another_way_is_the_same_schedule(folder):
    f = fleet(folder)
    listed = applied(f)
    listed[0].schedule = "0  3 * *  1"  # as the server echoed it
    plan = plan_apply(f, listed)
    assert plan.empty


def test_suspending_and_resuming_a_tenant_only_flips_its_schedule(folder):
    before = fleet(folder)
    f = fleet(folder, acme__suspend=True)
    plan = plan_apply(f, applied(before))
    (action,) = plan.actions
    assert action.schedule_only and action.suspend
    assert action.changes == ["suspend False -> True"]
    api = Api(applied(before))
    apply_plan(api, plan, namespace="oncall")
    assert api.calls == [("suspend", "sj-acme")]

    plan = plan_apply(before, applied(f))
    (action,) = plan.actions
    assert action.changes == ["suspend True -> False"] and not action.suspend
    api = Api(applied(f))
    apply_plan(api, plan, namespace="oncall")
    assert api.calls == [("resume", "sj-acme")]


def test_a_tenant_held_by_its_preflight_is_created_or_kept_suspended_and_resumes_once_released(folder):
    f = fleet(folder)
    why = {"globex": "preflight failed: invalid_rows: 12 of 12 rows do not fit sft"}
    plan = plan_apply(f, [], held=why)
    assert [(a.tenant, a.suspend) for a in plan.actions] == [("acme", False), ("globex", True)]
    assert plan.lines()[1].startswith("+ create  globex: 30 3 * * 1 on t4-small")
    assert "suspended (preflight failed: invalid_rows: 12 of 12 rows do not fit sft)" in plan.lines()[1]
    api = Api()
    apply_plan(api, plan, namespace="oncall")
    assert [c[2] for c in api.calls] == [False, True]

    (action,) = plan_apply(f, applied(f), held=why).actions  # running: suspended, saying why
    assert action.schedule_only and action.suspend and action.tenant == "globex"
    assert action.changes == ["suspend False -> True (preflight failed: invalid_rows: 12 of 12 rows do not fit sft)"]
    held_fleet = fleet(folder, globex__suspend=True)
    assert plan_apply(f, applied(held_fleet), held=why).empty  # held and suspended: nothing to do
    (action,) = plan_apply(f, applied(held_fleet)).actions  # released: the file's word again
    assert action.changes == ["suspend True -> False"] and not action.suspend
    assert plan_apply(held_fleet, applied(held_fleet)).empty  # the file says suspended: stays so


def test_a_schedule_and_a_flavor_change_replace_the_job(folder):
    before = fleet(folder)
    f = fleet(folder, acme__schedule="0 5 * * *", acme__flavor="l4x1")
    plan = plan_apply(f, applied(before))
    (action,) = plan.actions
    assert not action.schedule_only
    assert action.changes[0] == "schedule '0 3 * * 1' -> '0 5 * * *'"
    assert "flavor 't4-small' -> 'l4x1'" in action.changes
    api = Api(applied(before))
    done = apply_plan(api, plan, namespace="oncall")
    # the replacement first, then the old schedule goes
    assert api.calls == [("create", "0 5 * * *", False, "l4x1"), ("delete", "sj-acme")]
    assert done[0].startswith("replaced acme (sj-acme -> new-1): schedule '0 3 * * 1' -> '0 5 * * *'; ")


@pytest.mark.parametrize(("field", "value", "line"), [
    ("examples", 400, "examples 300 -> 400"),
    ("epochs", 2, "epochs 3 -> 2"),
    ("max_steps", 20, "max_steps 10 -> 20"),
    ("learning_rate", 5e-5, "learning_rate"),
    ("dataset", "data/acme-v2.jsonl", "dataset"),
])
def test_each_training_setting_is_a_change_that_names_old_and_new(folder, field, value, line):
    before = fleet(folder)
    f = fleet(folder, **{f"acme__{field}": value})
    plan = plan_apply(f, applied(before))
    (action,) = plan.actions
    assert action.op == "change" and action.tenant == "acme" and not action.schedule_only
    assert any(c.startswith(line) for c in action.changes), action.changes


def test_a_long_value_is_shown_by_its_end(folder):
    before = fleet(folder)
    f = fleet(folder, acme__hub_model_id="someorg/" + "a" * 50 + "-adapter-acme")
    plan = plan_apply(f, applied(before))
    (action,) = plan.actions
    (change,) = [c for c in action.changes if c.startswith("destination")]
    new = change.split(" -> ")[1]
    assert new == "..." + ("someorg/" + "a" * 50 + "-adapter-acme")[-37:]
    assert len(new) == 40


def test_a_timeout_the_server_runs_with_that_differs_is_a_change(folder):
    f = fleet(folder)
    sub = desired_submission(f.tenants[0], f, backend_kind="local", timeout_buffer=1.3)
    labels = {k: v for k, v in sub.labels.items() if k != "timeout"}
    listed = applied(f, acme={"timeout": 99, "labels": labels})
    (action,) = plan_apply(f, listed).actions
    assert action.changes == [f"timeout 99s -> {sub.timeout_seconds}s"]
    # unknown (HF sent none, no label): the fingerprint alone decides, and it matches
    listed = applied(f, acme={"timeout": None, "labels": labels})
    assert plan_apply(f, listed).empty


def test_a_different_job_spec_alone_is_named_as_such(folder):
    f = fleet(folder)
    sub = desired_submission(f.tenants[0], f, backend_kind="local", timeout_buffer=1.3)
    listed = applied(f, acme={"labels": {**sub.labels, "spec": "0123456789ab"}})
    (action,) = plan_apply(f, listed).actions
    assert action.changes == ["job spec (command, script or environment)"]


def test_duplicate_schedules_of_a_tenant_are_removed_and_the_matching_one_kept(folder):
    before = fleet(folder)
    f = fleet(folder, acme__examples=400)
    old, new = applied(before)[0], applied(f)[0]
    old.id, new.id = "sj-old", "sj-new"
    plan = plan_apply(f, [old, new, applied(f)[1]])
    assert [(a.op, a.scheduled_job_id, a.changes) for a in plan.actions] == [
        ("remove", "sj-old", ["duplicate schedule for this tenant"])]
    assert plan.unchanged == ["acme", "globex"]
    assert plan.actions[0].describe() == "- remove  acme (sj-old)"
    api = Api()
    assert apply_plan(api, plan, namespace="oncall") == ["removed acme (sj-old)"]
    assert api.calls == [("delete", "sj-old")]


def test_a_tenant_left_out_of_the_file_is_removed_others_are_left_alone(folder):
    full = fleet(folder)
    only_acme = parse_fleet({**FLEET, "tenant": [FLEET["tenant"][0]]}, folder / "fleet.toml")
    foreign = applied(full)[1]
    foreign.id = "sj-other-env"
    foreign.job_spec.labels = {**foreign.job_spec.labels, "env": "staging"}
    other_app = SimpleNamespace(id="sj-app", schedule="* * * * *", suspend=False,
                                job_spec=SimpleNamespace(labels={"app": "other", "env": "prod", "tenant": "x"},
                                                         command=[], arguments=[], environment={}, timeout=None))
    plan = plan_apply(only_acme, [*applied(full), foreign, other_app])
    assert [(a.op, a.tenant, a.scheduled_job_id, a.changes) for a in plan.actions] == [
        ("remove", "globex", "sj-globex", ["not in the fleet file"])]
    assert plan.lines()[-1] == "Plan (env=prod): 0 to create, 0 to change, 1 to remove, 1 unchanged."


def test_a_tenant_training_on_another_tenants_data_is_refused_with_its_reason(folder):
    f = fleet(folder)
    other = applied(f)[1]  # a schedule of a tenant this file does not list, on globex's data
    other.id = "sj-initech"
    other.job_spec.labels = {**other.job_spec.labels, "tenant": "initech"}
    with pytest.raises(PlanRefused) as refused:
        plan_apply(f, [other])
    assert len(refused.value.problems) == 1
    assert refused.value.problems[0].startswith("tenant 'globex': ")
    assert str(refused.value) == refused.value.problems[0]


def test_a_replacement_whose_old_schedule_cannot_be_deleted_says_both_run(folder):
    before = fleet(folder)
    f = fleet(folder, acme__flavor="l4x1")
    plan = plan_apply(f, applied(before))
    api = Api(fail_delete=RuntimeError("503 Service Unavailable\ntry again later"))
    with pytest.raises(ReplaceIncomplete) as exc:
        apply_plan(api, plan, namespace="oncall")
    assert str(exc.value) == ("acme: the new schedule new-1 is in place but the old one sj-acme could not be "
                              "deleted (503 Service Unavailable); apply again to remove it")
    assert (exc.value.tenant, exc.value.old_id, exc.value.new_id) == ("acme", "sj-acme", "new-1")
    api = Api(fail_delete=TimeoutError())
    with pytest.raises(ReplaceIncomplete, match=r"could not be deleted \(TimeoutError\)"):
        apply_plan(api, plan, namespace="oncall")


def test_each_done_action_is_reported_as_it_happens(folder):
    plan = plan_apply(fleet(folder), [])
    said: list[str] = []
    apply_plan(Api(), plan, namespace="oncall", report=said.append)
    assert said == ["created acme (new-1)", "created globex (new-2)"]


def test_a_suspended_new_tenant_is_created_suspended(folder):
    plan = plan_apply(fleet(folder, acme__suspend=True), [])
    api = Api()
    apply_plan(api, plan, namespace="oncall")
    assert api.calls[0] == ("create", "0 3 * * 1", True, "t4-small")
    assert isinstance(plan, ApplyPlan) and replace(plan, actions=[]).empty


def test_several_changes_are_listed_in_one_line(folder):
    before = fleet(folder)
    f = fleet(folder, globex__schedule="0 6 * * 2", globex__suspend=True)
    (action,) = plan_apply(f, applied(before)).actions
    line = "schedule '30 3 * * 1' -> '0 6 * * 2'; suspend False -> True"
    assert action.describe() == f"~ change  globex (sj-globex): {line}"
    api = Api(applied(before))
    done = apply_plan(api, plan_apply(f, applied(before)), namespace="oncall")
    assert api.calls == [("reschedule", "sj-globex", "0 6 * * 2"), ("suspend", "sj-globex")]
    assert done == [f"changed globex (sj-globex): {line}"]


def test_a_replaced_job_keeps_the_suspension_the_file_asks_for(folder):
    before = fleet(folder)
    f = fleet(folder, acme__flavor="l4x1", acme__suspend=True)
    api = Api(applied(before))
    apply_plan(api, plan_apply(f, applied(before)), namespace="oncall")
    assert api.calls == [("create", "0 3 * * 1", True, "l4x1"), ("delete", "sj-acme")]


def test_each_refused_tenant_is_named(folder):
    f = fleet(folder)
    others = applied(f)
    for sj, tenant in zip(others, ("initech", "hooli"), strict=True):
        sj.id = f"sj-{tenant}"
        sj.job_spec.labels = {**sj.job_spec.labels, "tenant": tenant}
    with pytest.raises(PlanRefused) as refused:
        plan_apply(f, others)
    problems = refused.value.problems
    assert [p.split(":")[0] for p in problems] == ["tenant 'acme'", "tenant 'globex'"]
    assert str(refused.value) == f"{problems[0]}; {problems[1]}"


def test_the_create_line_says_schedule_flavor_timeout_and_cost(folder):
    f = fleet(folder)
    plan = plan_apply(f, [])
    sub = plan.actions[0].submission
    assert plan.lines()[0] == (
        f"+ create  acme: 0 3 * * 1 on t4-small, timeout {sub.timeout_seconds}s, ~${sub.estimate_usd:.2f}/run"
        f"\n            timeout {sub.timeout_rule}")
    assert sub.timeout_rule.endswith(f"x 1.3 = {round(sub.timeout_seconds / 60)}m")


def test_the_timeout_buffer_and_set_up_time_lengthen_the_timeout(folder):
    f = fleet(folder)
    base = plan_apply(f, []).actions[0].submission.timeout_seconds
    longer = plan_apply(f, [], timeout_buffer=2.0).actions[0].submission.timeout_seconds
    more_setup = plan_apply(f, [], timeout_overhead_s=900).actions[0].submission.timeout_seconds
    assert base < longer and base < more_setup
    # and a schedule applied with the old timeout is a change to the new one
    (action,) = [a for a in plan_apply(f, applied(f), timeout_buffer=2.0).actions if a.tenant == "acme"]
    assert action.changes == [f"timeout {base}s -> {longer}s"]


def test_the_price_book_prices_each_run(folder):
    f = fleet(folder)
    book = shipped_price_book()
    t4 = book.flavors["t4-small"]
    dear = replace(book, flavors={**book.flavors, "t4-small": replace(t4, price_per_hour=t4.price_per_hour * 10)})
    cheap = plan_apply(f, []).actions[0].submission.estimate_usd
    costly = plan_apply(f, [], prices=dear).actions[0].submission.estimate_usd
    assert costly == pytest.approx(cheap * 10, rel=0.05)


def test_a_timeout_known_only_from_the_console_label_is_compared(folder):
    f = fleet(folder)
    sub = desired_submission(f.tenants[0], f, backend_kind="local", timeout_buffer=1.3)
    listed = applied(f, acme={"timeout": None, "labels": {**sub.labels, "timeout": "99"}})
    (action,) = plan_apply(f, listed).actions
    assert action.changes == [f"timeout 99s -> {sub.timeout_seconds}s"]


def test_the_configs_destination_and_trackio_apply_where_the_file_says_nothing(folder):
    f = fleet(folder, base_model="Qwen/Qwen3-0.6B")
    plan = plan_apply(f, [], backend_kind="hub", token="hf_secret", hub_model_id="org/adapter-{tenant}",
                      trackio_project="cfg-project", trackio_space_id="org/cfg-space")
    sub = plan.actions[0].submission
    req = jobspec.read_request(as_listed(sub, id="x", schedule="0 3 * * 1"))
    assert req.hub_model_id == "org/adapter-acme"
    assert (req.trackio_project, req.trackio_space_id) == ("cfg-project", "org/cfg-space")
    assert sub.secrets == {"HF_TOKEN": "hf_secret"}
    # the fleet file's own settings win over the config's
    own = fleet(folder, base_model="Qwen/Qwen3-0.6B", hub_model_id="team/lora-{tenant}", trackio_project="file-project",
                trackio_space_id="team/file-space")
    sub = plan_apply(own, [], backend_kind="hub", token="hf_secret", hub_model_id="org/adapter-{tenant}",
                     trackio_project="cfg-project", trackio_space_id="org/cfg-space").actions[0].submission
    req = jobspec.read_request(as_listed(sub, id="x", schedule="0 3 * * 1"))
    assert (req.hub_model_id, req.trackio_project, req.trackio_space_id) == (
        "team/lora-acme", "file-project", "team/file-space")


def test_a_local_run_logs_to_the_servers_trackio_not_a_space(folder):
    sub = plan_apply(fleet(folder), [], trackio_project="cfg-project",
                     trackio_space_id="org/cfg-space").actions[0].submission
    req = jobspec.read_request(as_listed(sub, id="x", schedule="0 3 * * 1"))
    assert req.trackio_project == "cfg-project" and req.trackio_space_id is None
    assert sub.secrets == {}


def test_on_the_hub_apply_ships_the_recipe_to_the_namespaces_bucket_and_mounts_it(folder):
    f = fleet(folder, base_model="Qwen/Qwen3-0.6B")
    plan = plan_apply(f, [], backend_kind="hub", token="hf_secret", hub_model_id="org/adapter-{tenant}")
    api = Api()
    apply_plan(api, plan, namespace="oncall")
    assert api.buckets[0] == ("create", "oncall/jobs-artifacts")
    uploads = [b for b in api.buckets[1:] if b[0] == "upload"]  # the recipes (and a local dataset file)
    assert uploads and all(b[1] == "oncall/jobs-artifacts" for b in uploads)
    assert any(name.endswith("/sft_lora.py") for b in uploads for name in b[2])
    assert "oncall/jobs-artifacts" in repr(api.created_kwargs[0]["volumes"])


def test_other_schedules_listed_first_do_not_hide_the_tenants(folder):
    f = fleet(folder)
    other_app = SimpleNamespace(id="sj-app", schedule="* * * * *", suspend=False,
                                job_spec=SimpleNamespace(labels={"app": "other"}, command=[], arguments=[],
                                                         environment={}, timeout=None))
    no_tenant = applied(f)[0]
    no_tenant.id = "sj-no-tenant"
    no_tenant.job_spec.labels = {k: v for k, v in no_tenant.job_spec.labels.items() if k != "tenant"}
    plan = plan_apply(f, [other_app, no_tenant, *applied(f)])
    assert plan.empty and plan.unchanged == ["acme", "globex"]


def test_a_schedule_without_a_kind_label_is_a_fine_tune(folder):
    f = fleet(folder)
    listed = applied(f)
    listed[0].job_spec.labels = {k: v for k, v in listed[0].job_spec.labels.items() if k != "kind"}
    plan = plan_apply(f, listed)
    assert "create" not in [a.op for a in plan.actions if a.tenant == "acme"]  # kept, never re-created


def test_a_value_of_up_to_forty_characters_is_shown_whole(folder):
    before = fleet(folder)
    cases = (("o/" + "b" * 38, "'o/" + "b" * 38 + "'"), ("o/" + "c" * 39, "..." + ("o/" + "c" * 39)[-37:]))
    for name, shown_as in cases:
        f = fleet(folder, acme__hub_model_id=name)
        (action,) = plan_apply(f, applied(before)).actions
        (change,) = [c for c in action.changes if c.startswith("destination")]
        assert change.endswith(" -> " + shown_as)
