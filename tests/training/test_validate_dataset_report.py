"""`validate_dataset.py`'s report as a user reads it (text or --json, then the VERDICT line), run in
this process through the script's `main` (tests/training/test_validate_dataset.py runs the same
script as a subprocess): the summary lines, the first offending rows with their line numbers,
the JSON record, and the exit codes."""

from __future__ import annotations

import json

import pytest
from training_helpers import DATA


def run(validator, capsys, *args: str) -> tuple[int, list[str]]:
    code = validator.main([*args])
    return code, capsys.readouterr().out.splitlines()


def test_a_good_dataset_reads_as_a_summary_and_a_pass(validator, capsys):
    code, lines = run(validator, capsys, str(DATA / "acme.jsonl"), "--max-length", "512")
    assert code == 0
    assert lines == [
        f"dataset {DATA / 'acme.jsonl'} (300 rows)",
        "format: messages   method: sft",
        "rows by format: messages=300",
        "approx tokens per row (chars/4): max 71, mean 57.3 (limit 512)",
        "valid rows: 300   rows with errors: 0",
        "VERDICT: PASS format=messages method=sft rows=300 max_tokens~71",
    ]


def test_a_broken_dataset_lists_its_errors_and_first_offending_rows(validator, capsys):
    code, lines = run(validator, capsys, str(DATA / "wayne.jsonl"), "--max-length", "256", "--show", "3")
    assert code == 1
    counts = ("wrong_type=3, missing_key=2, invalid_json=1, bad_role=1, empty_content=1, not_alternating=1, "
              "no_assistant=1, too_long=1")
    assert lines == [
        f"dataset {DATA / 'wayne.jsonl'} (51 rows)",
        "format: messages   method: sft",
        "rows by format: messages=48, invalid_json=1, unknown=1, not_an_object=1",
        "approx tokens per row (chars/4): max 757, mean 30.7 (limit 256)",
        "valid rows: 40   rows with errors: 11",
        f"errors: {counts}",
        "first offending rows (3 of 11):",
        "  line 4: invalid_json: Expecting ',' delimiter (column 58)",
        "  line 8: missing_key: no 'messages' (keys: conversation)",
        "  line 12: bad_role: messages[1].role is 'bot'; use system, user or assistant",
        f"VERDICT: FAIL invalid_rows: 11 of 51 rows do not fit sft ({counts})",
    ]


def test_show_zero_lists_no_rows(validator, capsys):
    code, lines = run(validator, capsys, str(DATA / "wayne.jsonl"), "--show", "0")
    assert code == 1 and not any(line.startswith("  line ") for line in lines)


def test_json_then_the_verdict_line(validator, capsys):
    code, lines = run(validator, capsys, str(DATA / "hooli.jsonl"), "--method", "sft", "--json")
    assert code == 1 and len(lines) == 2
    report = json.loads(lines[0])
    assert report == {
        "dataset": str(DATA / "hooli.jsonl"), "method": "sft", "format": "preference", "unit": "line",
        "rows": 200, "error_rows": 0, "valid_rows": 200, "format_counts": {"preference": 200}, "errors": {},
        "warnings": {}, "issues": [], "approx_tokens": {"unit": "ceil(chars/4)", "max": 64, "mean": 59.8},
        "max_length": None, "kto_labels": None, "passed": False,
        "verdict": "FAIL method_mismatch: preference rows do not fit sft (which needs messages / text / "
                   "prompt_completion); this data fits dpo, reward",
    }
    assert lines[1] == "VERDICT: " + report["verdict"]


def test_the_json_of_a_broken_dataset_lists_each_issue(validator, capsys):
    code, lines = run(validator, capsys, str(DATA / "wayne.jsonl"), "--max-length", "256", "--json")
    report = json.loads(lines[0])
    assert code == 1 and report["passed"] is False and report["error_rows"] == 11
    assert report["issues"][0] == {"line": 4, "code": "invalid_json", "severity": "error",
                                   "message": "Expecting ',' delimiter (column 58)"}
    assert [i["line"] for i in report["issues"]] == sorted(i["line"] for i in report["issues"])


@pytest.mark.usefixtures("any_row_count")
def test_a_duplicate_row_is_a_warning_that_does_not_fail(validator, capsys, tmp_path):
    row = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]})
    path = tmp_path / "dup.jsonl"
    path.write_text(f"{row}\n{row}\n{row}\n")
    code, lines = run(validator, capsys, str(path))
    assert code == 0
    assert "warnings: duplicate=2" in lines
    assert any(line.startswith("  line 2: duplicate (warning): same as line 1") for line in lines)
    assert lines[-1].startswith("VERDICT: PASS")


def test_an_unreadable_dataset_is_one_json_record_or_an_error_line(validator, capsys, tmp_path):
    missing = str(tmp_path / "nope.jsonl")
    why = (f"dataset file {missing} not found (a job sees only the files shipped with it; on HF Jobs pass a Hub "
           "dataset id or a local file to `hf jobs uv run`)")
    assert validator.main([missing, "--json"]) == 2
    out, err = capsys.readouterr()
    record, verdict = out.splitlines()
    assert json.loads(record) == {"dataset": missing, "passed": False, "error": why}
    assert verdict == f"VERDICT: FAIL unreadable: {why}" and err == ""
    assert validator.main([missing]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == (f"VERDICT: FAIL unreadable: {why}\n", f"error: {why}\n")


def test_bad_arguments_end_with_a_verdict_and_help_does_not(validator, capsys):
    with pytest.raises(SystemExit) as refused:
        validator.main([str(DATA / "acme.jsonl"), "--method", "ppo"])
    out, err = capsys.readouterr()
    assert refused.value.code == 2 and "invalid choice: 'ppo'" in err
    assert out == "VERDICT: FAIL bad_arguments: see usage above\n"
    with pytest.raises(SystemExit) as helped:
        validator.main(["--help"])
    out, _ = capsys.readouterr()
    assert helped.value.code == 0 and "VERDICT: FAIL" not in out
    assert out.startswith("usage: validate_dataset.py ")
    assert "local JSONL/JSON file or Hub dataset id" in out and "--method {sft,dpo,kto,grpo,reward,embedding}" in out


def test_max_length_must_be_positive_and_one_token_is_a_limit(validator, capsys):
    assert validator.main([str(DATA / "acme.jsonl"), "--max-length", "0"]) == 2
    assert capsys.readouterr().out == "VERDICT: FAIL bad_arguments: --max-length must be positive\n"
    code, lines = run(validator, capsys, str(DATA / "acme.jsonl"), "--max-length", "1")
    assert code == 1
    assert lines[-1] == "VERDICT: FAIL invalid_rows: 300 of 300 rows do not fit sft (too_long=300)"


def test_ten_offending_rows_are_listed_unless_told_otherwise(validator, capsys):
    code, lines = run(validator, capsys, str(DATA / "wayne.jsonl"), "--max-length", "256")
    assert code == 1 and "first offending rows (10 of 11):" in lines
    assert sum(line.startswith("  line ") for line in lines) == 10


@pytest.mark.usefixtures("any_row_count")
def test_the_json_record_keeps_non_ascii_text_as_it_is(validator, capsys, tmp_path):
    path = tmp_path / "données.jsonl"
    path.write_text(json.dumps({"text": "déjà vu"}, ensure_ascii=False) + "\n", encoding="utf-8")
    code, lines = run(validator, capsys, str(path), "--json")
    assert code == 0 and f'"dataset": "{path}"' in lines[0]


def test_the_json_record_lists_the_first_ten_issues_unless_told_otherwise(validator, capsys):
    code, lines = run(validator, capsys, str(DATA / "wayne.jsonl"), "--max-length", "256", "--json")
    assert code == 1 and len(json.loads(lines[0])["issues"]) == 10
    code, lines = run(validator, capsys, str(DATA / "wayne.jsonl"), "--max-length", "256", "--json", "--show", "2")
    assert len(json.loads(lines[0])["issues"]) == 2
