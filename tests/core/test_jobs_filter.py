"""The `/` filter of the jobs pane, as a user types it: each term narrows the rows, all must hold.

`tenant:` is a case-insensitive part of the tenant, `stage:` a prefix of the stage (several,
comma-separated, any of them), `label:k` a label that is set, `label:k=v` a label with exactly that
value, and a bare word a case-insensitive part of the row's text (id, tenant, kind, stage, flavor,
labels, message). `t:`, `s:` and `l:` are the short forms; a term with nothing after the colon is
a plain word.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from console.jobs import JobRow, parse_filter

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def job(tenant: str = "acme", stage: str = "RUNNING", labels: dict[str, str] | None = None,
        message: str | None = None, kind: str = "sft", flavor: str = "t4-small",
        id: str = "6a1f00000000000000000001") -> JobRow:
    return JobRow(id=id, tenant=tenant, kind=kind, stage=stage, flavor=flavor, created_at=T0,
                  started_at=T0, running_seconds=60.0, cost_usd=0.01,
                  labels=labels if labels is not None else {"tenant": tenant, "env": "prod"},
                  message=message)


def shown(text: str, *rows: JobRow) -> list[JobRow]:
    f = parse_filter(text)
    return [r for r in rows if f.matches(r)]


def test_an_empty_filter_shows_every_job() -> None:
    f = parse_filter("   ")
    assert f.empty
    assert f.matches(job()) and f.matches(job(stage="ERROR", labels={}))


@pytest.mark.parametrize("text", ["tenant:acme", "stage:run", "label:env", "loss"])
def test_any_term_makes_the_filter_not_empty(text: str) -> None:
    assert not parse_filter(text).empty


def test_tenant_is_a_case_insensitive_part_of_the_tenant() -> None:
    acme, globex = job("acme"), job("Globex")
    assert shown("tenant:ACM", acme, globex) == [acme]
    assert shown("t:glob", acme, globex) == [globex]
    assert shown("tenant:initech", acme, globex) == []


def test_stage_is_a_prefix_of_the_stage_and_a_list_means_any() -> None:
    running, error, completed = job(stage="RUNNING"), job(stage="ERROR"), job(stage="COMPLETED")
    assert shown("stage:run", running, error, completed) == [running]
    assert shown("s:RUN,err", running, error, completed) == [running, error]
    # a prefix, not a part: "ing" is in RUNNING but does not start it
    assert shown("stage:ing", running, error, completed) == []
    assert shown("stage:running", running) == [running]
    # empty items of the list are ignored, not a prefix of everything
    assert shown("stage:,com,", running, error, completed) == [completed]


def test_a_label_without_value_asks_that_it_is_set() -> None:
    prod, bare = job(labels={"env": "prod"}), job(labels={})
    assert shown("label:env", prod, bare) == [prod]
    assert shown("l:env", prod, bare) == [prod]
    assert shown("label:team", prod, bare) == []


def test_a_label_with_value_asks_for_exactly_that_value() -> None:
    prod, staging = job(labels={"env": "prod"}), job(labels={"env": "staging"})
    assert shown("label:env=prod", prod, staging) == [prod]
    assert shown("label:env=staging", prod, staging) == [staging]
    # a different value, a longer one and a part of it do not match
    assert shown("label:env=dev", prod, staging) == []
    assert shown("label:env=pro", prod, staging) == []
    assert shown("label:env=", prod, staging) == []  # set to the empty string: none is
    assert shown("label:other=prod", prod, staging) == []
    assert shown("l:env=prod", prod, staging) == [prod]


def test_a_label_value_may_hold_a_colon() -> None:
    pinned = job(labels={"image": "python:3.12"})
    assert shown("label:image=python:3.12", pinned) == [pinned]
    assert shown("label:image=python:3.11", pinned) == []


def test_every_label_term_must_hold() -> None:
    both = job(labels={"env": "prod", "team": "ml"})
    one = job(labels={"env": "prod", "team": "infra"})
    assert shown("label:env=prod label:team=ml", both, one) == [both]
    assert shown("label:env label:team", both, one) == [both, one]


def test_a_bare_word_is_a_case_insensitive_part_of_the_row() -> None:
    oom = job(message="CUDA out of memory", id="aaaa")
    ok = job(message=None, kind="dpo", flavor="a10g-large", labels={"run": "nightly"}, id="bbbb")
    assert shown("MEMORY", oom, ok) == [oom]
    assert shown("dpo", oom, ok) == [ok]
    assert shown("a10g", oom, ok) == [ok]
    assert shown("run=nightly", oom, ok) == [ok]  # labels are part of the text as k=v
    assert shown("bbbb", oom, ok) == [ok]  # the job id too
    assert shown("cuda memory", oom, ok) == [oom]  # all words must be there, in any order
    assert shown("cuda nightly", oom, ok) == []


@pytest.mark.parametrize("word", ["xx", "xxxx", "zzz"])
def test_a_word_in_no_column_matches_no_job(word: str) -> None:
    assert shown(word, job(message=None), job(message="loss 0.4", labels={})) == []


def test_the_row_text_holds_every_column_the_words_search() -> None:
    row = job(tenant="Acme", stage="ERROR", kind="sft", flavor="t4-small", labels={"env": "prod", "team": "ml"},
              message="Boom", id="6A1F")
    text = row.text()
    for part in ("6a1f", "acme", "sft", "error", "t4-small", "env=prod team=ml", "boom"):
        assert part in text
    assert text == text.lower()
    assert "None" not in job(message=None).text()


def test_terms_combine_tenant_stage_label_and_words() -> None:
    hit = job("acme", "ERROR", {"env": "prod"}, "loss diverged")
    other_tenant = job("globex", "ERROR", {"env": "prod"}, "loss diverged")
    other_stage = job("acme", "COMPLETED", {"env": "prod"}, "loss diverged")
    other_label = job("acme", "ERROR", {"env": "dev"}, "loss diverged")
    other_word = job("acme", "ERROR", {"env": "prod"}, "out of memory")
    rows = (hit, other_tenant, other_stage, other_label, other_word)
    assert shown("tenant:acme stage:err label:env=prod diverged", *rows) == [hit]


def test_a_key_with_nothing_after_the_colon_is_a_plain_word() -> None:
    f = parse_filter("tenant: stage: label:")
    assert f.tenant is None and f.stages == () and f.labels == ()
    assert f.words == ("tenant:", "stage:", "label:")
    assert not f.empty


def test_an_unknown_key_is_a_plain_word_and_keys_ignore_case() -> None:
    f = parse_filter("Owner:bob TENANT:Acme S:Run")
    assert f.words == ("owner:bob",)
    assert f.tenant == "Acme" and f.stages == ("run",)
    assert f.text == "Owner:bob TENANT:Acme S:Run"


def test_the_last_tenant_term_wins() -> None:
    acme, globex = job("acme"), job("globex")
    assert shown("tenant:acme tenant:globex", acme, globex) == [globex]
