"""The dataset report as its readers see it: the summary lines and the JSON record of
`validate_dataset.py` (errors before warnings, KTO label counts, a dataset-wide warning, a file with
no rows), the one-line reason a recipe refuses a dataset with, and the rows a recipe then trains on."""

from __future__ import annotations

import json

import pytest
from test_validate_dataset import write_jsonl


def U(c):
    return {"role": "user", "content": c}


def A(c):
    return {"role": "assistant", "content": c}


CHAT = {"messages": [U("hi"), A("hello")]}
NO_ANSWER = {"messages": [U("hi")]}


def run(validator, capsys, *args: str) -> tuple[int, list[str]]:
    code = validator.main([*args])
    return code, capsys.readouterr().out.splitlines()


def test_errors_are_listed_before_warnings_of_earlier_lines(validator, capsys, tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [CHAT, CHAT, NO_ANSWER])
    code, lines = run(validator, capsys, path)
    assert code == 1
    assert lines == [
        f"dataset {path} (3 rows)",
        "format: messages   method: sft",
        "rows by format: messages=3",
        "approx tokens per row (chars/4): max 2, mean 1.7",
        "valid rows: 2   rows with errors: 1",
        "errors: no_assistant=1",
        "warnings: duplicate=1",
        "first offending rows (2 of 2):",
        "  line 3: no_assistant: 'messages' ends with a user turn, not assistant",
        "  line 2: duplicate (warning): same as line 1",
        "VERDICT: FAIL invalid_rows: 1 of 3 rows do not fit sft (no_assistant=1)",
    ]


def test_the_json_record_counts_errors_and_warnings_apart(validator, capsys, tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [CHAT, CHAT, NO_ANSWER])
    code, lines = run(validator, capsys, path, "--json")
    record = json.loads(lines[0])
    assert code == 1
    assert (record["errors"], record["warnings"]) == ({"no_assistant": 1}, {"duplicate": 1})
    assert [(i["line"], i["severity"]) for i in record["issues"]] == [(3, "error"), (2, "warning")]


@pytest.mark.usefixtures("any_row_count")
def test_a_passing_dataset_reads_pass_in_its_json_record(validator, capsys, tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [CHAT])
    code, lines = run(validator, capsys, path, "--json")
    record = json.loads(lines[0])
    assert code == 0 and record["passed"] is True
    assert record["verdict"] == "PASS format=messages method=sft rows=1 max_tokens~2"
    assert record["approx_tokens"] == {"unit": "ceil(chars/4)", "max": 2, "mean": 2.0}


def test_a_file_without_rows_reports_no_format_and_no_tokens(validator, capsys, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    code, lines = run(validator, capsys, str(path))
    assert code == 1
    assert lines == [
        f"dataset {path} (0 rows)",
        "format: unknown   method: sft",
        "approx tokens per row (chars/4): max 0, mean 0",
        "valid rows: 0   rows with errors: 0",
        "VERDICT: FAIL empty: the dataset has no rows",
    ]
    code, lines = run(validator, capsys, str(path), "--json")
    record = json.loads(lines[0])
    assert record["format"] is None and record["approx_tokens"] == {"unit": "ceil(chars/4)", "max": 0, "mean": 0}
    assert record["verdict"] == "FAIL empty: the dataset has no rows"


@pytest.mark.usefixtures("any_row_count")
def test_kto_labels_are_counted_and_a_single_class_is_a_dataset_warning(validator, capsys, tmp_path):
    rows = [{"prompt": "p", "completion": c, "label": label} for c, label in [("a", True), ("b", False), ("c", True)]]
    code, lines = run(validator, capsys, write_jsonl(tmp_path / "k.jsonl", rows), "--method", "kto")
    assert code == 0 and "kto labels: false=1, true=2" in lines
    code, lines = run(validator, capsys, write_jsonl(tmp_path / "k.jsonl", rows), "--method", "kto", "--json")
    assert json.loads(lines[0])["kto_labels"] == {"true": 2, "false": 1}

    one_class = [{"prompt": "p", "completion": c, "label": True} for c in ("a", "b", "a")]
    code, lines = run(validator, capsys, write_jsonl(tmp_path / "k1.jsonl", one_class), "--method", "kto")
    assert code == 0
    assert lines[-6:] == [
        "valid rows: 3   rows with errors: 0",
        "warnings: duplicate=1, single_label=1",
        "first offending rows (2 of 2):",
        "  dataset: single_label (warning): every label is true; KTO wants both classes",
        "  line 3: duplicate (warning): same as line 1",
        "VERDICT: PASS format=kto method=kto rows=3 max_tokens~1",
    ]


def test_a_recipe_refuses_a_dataset_with_the_reason_and_its_first_offending_row(validator, tmp_path):
    report = validator.validate(write_jsonl(tmp_path / "d.jsonl", [CHAT, CHAT, NO_ANSWER]), "sft", None)
    assert validator.failure(report) == (
        "invalid_rows: 1 of 3 rows do not fit sft (no_assistant=1); "
        "first: line 3: no_assistant: 'messages' ends with a user turn, not assistant")


def test_a_dataset_that_fits_another_method_is_refused_with_that_reason_alone(validator, tmp_path):
    rows = [{"prompt": "p", "chosen": "a", "rejected": "b"}, {"prompt": "p", "chosen": "a", "rejected": "a"}]
    report = validator.validate(write_jsonl(tmp_path / "d.jsonl", rows), "sft", None)
    assert validator.failure(report) == (
        "method_mismatch: preference rows do not fit sft (which needs messages / text / prompt_completion); "
        "this data fits dpo, reward")


@pytest.mark.usefixtures("any_row_count")
def test_the_rows_a_recipe_trains_on_keep_only_the_trained_fields(validator, tmp_path):
    rows = [
        {"messages": [{"role": "user", "content": "hi", "name": "ann"}, A("hello")], "source": "crm"},
        {"messages": [U("bye"), {"role": "assistant", "content": "see you", "weight": 0.5}]},
    ]
    report = validator.validate(write_jsonl(tmp_path / "d.jsonl", rows), "sft", None)
    assert validator.training_rows(report) == [
        {"messages": [U("hi"), A("hello")]},
        {"messages": [U("bye"), A("see you")]},
    ]
    rows = [{"prompt": "p", "chosen": "a", "rejected": "b", "id": 7}]
    report = validator.validate(write_jsonl(tmp_path / "p.jsonl", rows), "dpo", None)
    assert validator.training_rows(report) == [{"prompt": "p", "chosen": "a", "rejected": "b"}]
