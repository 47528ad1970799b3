"""The CPU dataset preflight: formats, each kind of malformed row, method fit, output."""

from __future__ import annotations

import json

import pytest
from training_helpers import DATA, VALIDATE, run, script_env


def turns(*pairs: tuple[str, object]) -> list[dict]:
    return [{"role": r, "content": c} for r, c in pairs]


GOOD_CHAT = {"messages": turns(("user", "hi"), ("assistant", "hello"))}


@pytest.mark.parametrize(
    ("name", "method", "fmt"),
    [
        ("acme", "sft", "messages"),
        ("globex", "sft", "prompt_completion"),
        ("initech", "sft", "text"),
        ("umbrella", "sft", "messages"),
        ("hooli", "dpo", "preference"),
        ("piedpiper", "kto", "kto"),
        ("cyberdyne", "reward", "preference"),
    ],
)
def test_sample_datasets_pass(validator, name, method, fmt):
    report = validator.validate(str(DATA / f"{name}.jsonl"), method, max_length=512)
    passed, reason = report.verdict()
    assert passed, [i.as_dict() for i in report.issues[:5]]
    assert report.fmt == fmt
    assert 150 <= report.rows <= 400
    assert not report.counts("warning")
    assert reason.startswith(f"format={fmt} method={method} rows={report.rows} max_tokens~")


def test_malformed_sample_has_each_kind_of_error(validator):
    report = validator.validate(str(DATA / "wayne.jsonl"), "sft", max_length=256)
    by_code = {}
    for issue in report.issues:
        by_code.setdefault(issue.code, []).append(issue.line)
    assert set(by_code) == {
        "invalid_json", "missing_key", "bad_role", "empty_content", "not_alternating",
        "wrong_type", "no_assistant", "too_long",
    }  # fmt: skip
    # the sample puts one bad row every 4 lines from line 4 (see make_samples.wayne)
    assert by_code["invalid_json"] == [4]
    assert by_code["missing_key"] == [8, 40]
    assert by_code["bad_role"] == [12]
    assert by_code["empty_content"] == [16]
    assert by_code["not_alternating"] == [20]
    assert sorted(by_code["wrong_type"]) == [24, 28, 44]
    assert by_code["no_assistant"] == [32]
    assert by_code["too_long"] == [36]
    assert not report.verdict()[0]


PC = {"prompt": "p", "completion": "c"}
PREF = {"prompt": "p", "chosen": "a", "rejected": "b"}
KTO = {"prompt": "p", "completion": "c", "label": True}
CASES = [
    # (rows, method, expected code) - the bad row is always the last line
    ([GOOD_CHAT, "{not json"], "sft", "invalid_json"),
    ([GOOD_CHAT, {"msgs": []}], "sft", "missing_key"),
    ([GOOD_CHAT, {"messages": [{"role": "user"}]}], "sft", "missing_key"),
    ([GOOD_CHAT, {"messages": turns(("human", "hi"), ("assistant", "x"))}], "sft", "bad_role"),
    ([GOOD_CHAT, {"messages": turns(("user", ""), ("assistant", "x"))}], "sft", "empty_content"),
    ([GOOD_CHAT, {"messages": turns(("user", "hi"), ("assistant", " "))}], "sft", "empty_content"),
    ([GOOD_CHAT, {"messages": []}], "sft", "empty_content"),
    ([GOOD_CHAT, {"messages": turns(("user", None), ("assistant", "x"))}], "sft", "wrong_type"),
    ([GOOD_CHAT, {"messages": {"role": "user"}}], "sft", "wrong_type"),
    ([GOOD_CHAT, {"messages": ["user: hi"]}], "sft", "wrong_type"),
    ([GOOD_CHAT, [1, 2]], "sft", "wrong_type"),
    ([GOOD_CHAT, {"messages": turns(("assistant", "a"), ("user", "b"))}], "sft", "not_alternating"),
    (
        [GOOD_CHAT, {"messages": turns(("user", "a"), ("assistant", "b"), ("assistant", "c"))}],
        "sft",
        "not_alternating",
    ),
    (
        [GOOD_CHAT, {"messages": turns(("user", "a"), ("system", "b"), ("assistant", "c"))}],
        "sft",
        "not_alternating",
    ),
    ([GOOD_CHAT, {"messages": turns(("user", "a"))}], "sft", "no_assistant"),
    ([GOOD_CHAT, {"messages": turns(("system", "a"))}], "sft", "no_assistant"),
    ([GOOD_CHAT, {"text": "a row without messages"}], "sft", "missing_key"),
    ([PC, PC, {**PC, "label": False}], "sft", "format_mismatch"),
    ([{"text": "ok"}, {"text": ""}], "sft", "empty_content"),
    ([{"text": "ok"}, {"text": 3}], "sft", "wrong_type"),
    ([PC, {"prompt": "p"}], "sft", "missing_key"),
    ([PC, {"prompt": "p", "completion": "  "}], "sft", "empty_content"),
    ([PC, {"prompt": 1, "completion": "c"}], "sft", "wrong_type"),
    ([PC, {"prompt": turns(("assistant", "x")), "completion": "c"}], "sft", "not_alternating"),
    ([PC, {"prompt": "p", "completion": turns(("user", "x"))}], "sft", "no_assistant"),
    ([PC, {"prompt": "p", "completion": turns(("assistant", "x"))}], "sft", "wrong_type"),
    ([PC, {"prompt": turns(("user", "u")), "completion": "c"}], "sft", "wrong_type"),
    ([PREF, {"prompt": "p", "chosen": "a"}], "dpo", "missing_key"),
    ([PREF, {**PREF, "rejected": "a"}], "dpo", "identical_pair"),
    ([PREF, {"chosen": "a", "rejected": "b"}], "dpo", "missing_key"),
    ([PREF, {**PREF, "chosen": ""}], "dpo", "empty_content"),
    ([PREF, {**PREF, "chosen": turns(("assistant", "a"))}], "dpo", "wrong_type"),
    ([KTO, {**KTO, "label": 1}], "kto", "wrong_type"),
    ([KTO, {**KTO, "label": "yes"}], "kto", "wrong_type"),
    ([KTO, {"prompt": "p", "label": False}], "kto", "missing_key"),
    ([KTO, {**KTO, "prompt": turns(("user", "u"))}], "kto", "wrong_type"),
    ([GOOD_CHAT, {"messages": turns(("user", "x" * 400), ("assistant", "y"))}], "sft", "too_long"),
]  # fmt: skip


def write_jsonl(path, rows) -> str:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize(("rows", "method", "code"), CASES)
def test_each_kind_of_malformed_row_is_caught(validator, tmp_path, rows, method, code):
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    report = validator.validate(path, method, max_length=64)
    errors = [i for i in report.issues if i.severity == "error"]
    bad_line = len(rows)  # the bad row is always the last one
    assert [(i.line, i.code) for i in errors] == [(bad_line, code)], [i.as_dict() for i in errors]
    passed, reason = report.verdict()
    assert not passed
    assert reason.startswith(f"invalid_rows: 1 of {len(rows)} rows")


@pytest.mark.usefixtures("any_row_count")
def test_system_turn_first_is_fine_and_conversational_prompt_completion(validator, tmp_path):
    rows = [
        {"messages": turns(("system", "s"), ("user", "u"), ("assistant", "a"))},
        {"messages": turns(("user", "u"), ("assistant", "a"), ("user", "u2"), ("assistant", "b"))},
    ]
    report = validator.validate(write_jsonl(tmp_path / "a.jsonl", rows), "sft", None)
    assert report.verdict()[0]
    rows = [{"prompt": turns(("user", "u")), "completion": turns(("assistant", "a"))}]
    report = validator.validate(write_jsonl(tmp_path / "b.jsonl", rows), "sft", None)
    assert report.verdict()[0] and report.fmt == "prompt_completion"
    # implicit-prompt preference pairs: chosen/rejected carry the whole conversation
    rows = [
        {
            "chosen": turns(("user", "q"), ("assistant", "good")),
            "rejected": turns(("user", "q"), ("assistant", "bad")),
        }
    ]
    report = validator.validate(write_jsonl(tmp_path / "c.jsonl", rows), "dpo", None)
    assert report.verdict()[0] and report.fmt == "preference"


def test_the_grpo_sample_passes_and_its_rows_are_checked(validator, tmp_path):
    report = validator.validate(str(DATA / "massive.jsonl"), "grpo", max_length=512)
    assert report.verdict() == (True, "format=prompt_answer method=grpo rows=96 max_tokens~46")
    good = {"prompt": "2 + 2?", "answer": "4"}
    rows = [good] * 7 + [
        {"prompt": "3 + 3?", "answer": 6},  # a number is an answer too
        {"prompt": "4 + 4?", "answer": True},
        {"prompt": "5 + 5?", "answer": " "},
        {"prompt": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}], "answer": "1"},
    ]
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = validator.validate(str(path), "grpo", None)
    assert [(i.line, i.code, i.message) for i in report.issues if i.severity == "error"] == [
        (9, "wrong_type", "'answer' is bool, not a string or a number"),
        (10, "empty_content", "'answer' is empty"),
        (11, "not_alternating", "'prompt' ends with an assistant turn, not user"),
    ]


@pytest.mark.parametrize(
    ("name", "method", "fits"),
    [
        ("hooli", "sft", "dpo, reward"),
        ("acme", "dpo", "sft"),
        ("acme", "grpo", "sft"),
        ("massive", "sft", "grpo"),
        ("massive", "reward", "grpo"),
        ("piedpiper", "sft", "kto"),
        ("acme", "kto", "sft"),
    ],
)
def test_data_that_does_not_fit_the_method_fails(validator, name, method, fits):
    report = validator.validate(str(DATA / f"{name}.jsonl"), method, None)
    passed, reason = report.verdict()
    assert not passed
    assert reason.startswith("method_mismatch: ")
    assert reason.endswith(f"this data fits {fits}")


@pytest.mark.usefixtures("any_row_count")
def test_warnings_do_not_fail(validator, tmp_path):
    rows = [GOOD_CHAT, GOOD_CHAT]
    report = validator.validate(write_jsonl(tmp_path / "d.jsonl", rows), "sft", None)
    assert report.counts("warning") == {"duplicate": 1}
    assert report.verdict()[0]
    rows = [{"prompt": "p", "completion": str(i), "label": True} for i in range(3)]
    report = validator.validate(write_jsonl(tmp_path / "k.jsonl", rows), "kto", None)
    assert report.counts("warning") == {"single_label": 1}
    assert report.verdict()[0]


def test_unknown_format_and_empty_file(validator, tmp_path):
    report = validator.validate(write_jsonl(tmp_path / "u.jsonl", [{"q": 1}]), "sft", None)
    assert report.verdict()[1].startswith("unknown_format: ")
    (tmp_path / "e.jsonl").write_text("\n\n")
    assert (
        validator.validate(str(tmp_path / "e.jsonl"), "sft", None)
        .verdict()[1]
        .startswith("empty: ")
    )


def test_json_array_files_count_rows(validator, tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps([GOOD_CHAT, {"messages": turns(("user", "x"))}]))
    report = validator.validate(str(path), "sft", None)
    assert report.unit == "row"
    assert [(i.line, i.code) for i in report.issues] == [(2, "no_assistant")]


# ----------------------------------------------------------------------------- the command


def test_cli_summary_and_verdict_for_a_good_dataset(tmp_path):
    result = run(
        VALIDATE,
        [str(DATA / "acme.jsonl"), "--max-length", "512"],
        script_env(tmp_path),
        python_flags=("-X", "importtime"),
    )
    assert result.returncode == 0
    assert "format: messages   method: sft" in result.stdout
    assert "valid rows: 300   rows with errors: 0" in result.stdout
    assert result.last_line.startswith("VERDICT: PASS format=messages method=sft rows=300 ")
    # standard library only for local files: starts instantly
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.splitlines()}
    assert not imported & {"datasets", "pyarrow", "torch", "numpy"}
    # how fast it answers is a benchmark goal: benchmarks/run.py --only scripts (< 1 s)


def test_cli_lists_first_offending_rows_with_line_numbers(tmp_path):
    result = run(
        VALIDATE,
        [str(DATA / "wayne.jsonl"), "--max-length", "256", "--show", "3"],
        script_env(tmp_path),
    )
    assert result.returncode == 1
    assert "first offending rows (3 of 11):" in result.stdout
    assert "  line 4: invalid_json: " in result.stdout
    assert "  line 8: missing_key: " in result.stdout
    assert "  line 12: bad_role: " in result.stdout
    assert "line 16" not in result.stdout
    assert result.last_line.startswith("VERDICT: FAIL invalid_rows: 11 of 51 rows do not fit sft")


def test_cli_json_then_verdict(tmp_path):
    result = run(
        VALIDATE, [str(DATA / "hooli.jsonl"), "--method", "sft", "--json"], script_env(tmp_path)
    )
    assert result.returncode == 1
    lines = result.lines
    assert len(lines) == 2
    report = json.loads(lines[0])
    assert report["format"] == "preference"
    assert report["passed"] is False
    assert report["rows"] == 200
    assert report["approx_tokens"]["unit"] == "ceil(chars/4)"
    assert lines[1] == "VERDICT: " + report["verdict"]
    assert lines[1].startswith("VERDICT: FAIL method_mismatch")


def test_cli_unreadable_dataset_exits_2(tmp_path):
    result = run(VALIDATE, [str(tmp_path / "nope.jsonl")], script_env(tmp_path))
    assert result.returncode == 2
    assert result.last_line.startswith("VERDICT: FAIL unreadable: ")
    bad = run(VALIDATE, [str(DATA / "acme.jsonl"), "--method", "ppo"], script_env(tmp_path))
    assert bad.returncode == 2
    assert bad.last_line.startswith("VERDICT: FAIL bad_arguments")
