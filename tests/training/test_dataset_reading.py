"""How the dataset validator reads what it is given, and what it says when it cannot: a folder, a
file that is not there, a name that is neither a file nor a Hub id, bytes that are not UTF-8, a
JSON array (pretty-printed or broken) beside JSONL, and the local Parquet/CSV files read through
the `datasets` library, whose rows are numbered from 1 like a JSON array's. Which datasets need
that library at all decides whether a recipe checks the rows before it imports torch."""

from __future__ import annotations

import json

import pytest

NOT_FOUND = ("not found (a job sees only the files shipped with it; on HF Jobs pass a Hub dataset id or a local "
             "file to `hf jobs uv run`)")


def verdict(validator, capsys, dataset: str, *args: str) -> tuple[int, str]:
    code = validator.main([dataset, *args])
    return code, capsys.readouterr().out.splitlines()[-1]


@pytest.fixture
def datasets_library():
    """`datasets`, imported here (about a second, once a session) after the test's own HF_HOME is set."""
    return pytest.importorskip("datasets")


def test_a_folder_is_not_a_dataset_file(validator, capsys, tmp_path):
    assert verdict(validator, capsys, str(tmp_path)) == (
        2, f"VERDICT: FAIL unreadable: {tmp_path} is a folder; give a JSONL file")


@pytest.mark.parametrize("name", ["nope.jsonl", "nope.json", "nope.parquet", "./nope", "/no/such/dataset",
                                  "~/no-such-dataset-here"])
def test_a_missing_file_is_named_with_where_a_job_finds_its_files(validator, capsys, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    assert verdict(validator, capsys, name) == (2, f"VERDICT: FAIL unreadable: dataset file {name} {NOT_FOUND}")


def test_a_name_that_is_neither_a_file_nor_a_hub_id(validator, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert verdict(validator, capsys, "my data") == (
        2, "VERDICT: FAIL unreadable: 'my data' is neither a file nor a Hub id")


def test_only_hub_ids_and_parquet_or_csv_files_need_the_datasets_library(validator, tmp_path):
    for name in ("rows.jsonl", "rows.json", "rows.csv", "ROWS.PARQUET"):
        (tmp_path / name).write_text("")
    needs = validator.needs_datasets
    assert needs("org/support-chats") and needs("support-chats")
    assert not needs(str(tmp_path / "rows.jsonl")) and not needs(str(tmp_path / "rows.json"))
    assert needs(str(tmp_path / "rows.csv")) and needs(str(tmp_path / "ROWS.PARQUET"))
    with pytest.raises(validator.ReadError, match="is a folder"):
        needs(str(tmp_path))


def test_bytes_that_are_not_utf8_cannot_be_read(validator, capsys, tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b"\xff{}\n")
    assert verdict(validator, capsys, str(path)) == (
        2, f"VERDICT: FAIL unreadable: cannot read {path}: 'utf-8' codec can't decode byte 0xff in position 0: "
           "invalid start byte")


def test_a_broken_json_array_is_unreadable(validator, capsys, tmp_path):
    path = tmp_path / "rows.json"
    path.write_text('[{"messages": ')
    assert verdict(validator, capsys, str(path)) == (
        2, f"VERDICT: FAIL unreadable: {path}: invalid JSON array: Expecting value: line 1 column 15 (char 14)")


def test_a_pretty_printed_json_array_is_read_row_by_row(validator, tmp_path):
    good = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    bad = {"messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "rows.json"
    path.write_text("\n  " + json.dumps([good, bad], indent=2) + "\n")
    report = validator.validate(str(path), "sft", None)
    assert (report.unit, report.rows) == ("row", 2)
    assert [(i.line, i.code) for i in report.issues] == [(2, "no_assistant")]


def test_json_lines_are_read_line_by_line_whatever_the_suffix_and_first_character(validator, tmp_path):
    good = json.dumps({"text": "a row"})
    (tmp_path / "rows.json").write_text(f"{good}\n{json.dumps({'text': ''})}\n")
    report = validator.validate(str(tmp_path / "rows.json"), "sft", None)
    assert report.unit == "line" and [(i.line, i.code) for i in report.issues] == [(2, "empty_content")]
    (tmp_path / "rows.jsonl").write_text(f"[1, 2]\n{good}\n")
    report = validator.validate(str(tmp_path / "rows.jsonl"), "sft", None)
    assert report.unit == "line"
    assert [(i.line, i.message) for i in report.issues] == [(1, "row is a JSON list, not an object")]


def test_a_csv_file_is_read_through_datasets_with_rows_numbered_from_one(validator, capsys, tmp_path, datasets_library):
    path = tmp_path / "pairs.csv"
    path.write_text("prompt,completion\nhow do I reset it?,hold the button\n,an answer without a question\n")
    code = validator.main([str(path)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert lines[0] == f"dataset {path} (2 rows)"
    assert lines[-2:] == [
        "  row 2: wrong_type: 'prompt' is NoneType, not a string or turns",
        "VERDICT: FAIL invalid_rows: 1 of 2 rows do not fit sft (wrong_type=1)",
    ]


def test_a_parquet_file_that_is_not_parquet_is_unreadable(validator, capsys, tmp_path, datasets_library):
    path = tmp_path / "rows.parquet"
    path.write_bytes(b"garbage")
    code, line = verdict(validator, capsys, str(path))
    assert code == 2 and line.startswith("VERDICT: FAIL unreadable: cannot load parquet: ArrowInvalid: ")


@pytest.mark.usefixtures("any_row_count")
def test_a_parquet_file_with_a_timestamp_column_is_checked_and_its_duplicates_found(validator, tmp_path,
                                                                                    datasets_library):
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    noon = datetime.datetime(2026, 1, 1, 12, 0)
    table = pa.table({"text": ["a row", "another row", "a row"],
                      "created": [noon, datetime.datetime(2026, 1, 2), noon]})  # datetimes, not JSON
    pq.write_table(table, tmp_path / "rows.parquet")
    report = validator.validate(str(tmp_path / "rows.parquet"), "sft", None)
    assert report.verdict() == (True, "format=text method=sft rows=3 max_tokens~3")
    assert [(i.line, i.code, i.message) for i in report.issues] == [(3, "duplicate", "same as row 1")]
