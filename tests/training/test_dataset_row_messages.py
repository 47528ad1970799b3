"""What the dataset validator says about each malformed row of every method, word for word: the
code and the message a user reads in "first offending rows", on the row's own line; and the checks
of a whole file (how rows are counted by format, an empty or unknown file, too long, duplicates)."""

from __future__ import annotations

import json

import pytest
from test_conversation_rows import A, S, U
from test_validate_dataset import write_jsonl

CHAT = {"messages": [U("hi"), A("hello")]}
PC = {"prompt": "p", "completion": "c"}
PREF = {"prompt": "p", "chosen": "a", "rejected": "b"}
KTO = {"prompt": "p", "completion": "c", "label": True}
GOOD = {"sft": CHAT, "dpo": PREF, "kto": KTO}


def issues(validator, tmp_path, rows, method, max_length=None, severity=None):
    report = validator.validate(write_jsonl(tmp_path / "rows.jsonl", rows), method, max_length)
    return [(i.line, i.code, i.message) for i in report.issues if severity in (None, i.severity)]


@pytest.mark.parametrize(("method", "row", "code", "message"), [
    # text rows
    ("sft", {"text": [U("hi"), A("hello")]}, "wrong_type", "'text' is a list; use 'messages' for conversations"),
    ("sft", {"text": " "}, "empty_content", "'text' is empty"),
    ("sft", {"text": 3}, "wrong_type", "'text' is int, not a string or turns"),
    # prompt / completion rows
    ("sft", {"prompt": [U("q"), A("a")], "completion": [A("b")]}, "not_alternating",
     "'prompt' ends with an assistant turn, not user"),
    ("sft", {"prompt": [A("a"), U("q")], "completion": [A("b")]}, "not_alternating",
     "'prompt': turn 0 is 'assistant' where 'user' was expected (roles: assistant, user)"),
    ("sft", {"prompt": [U("q")], "completion": [S("s")]}, "no_assistant",
     "'completion' ends with a system turn, not assistant"),
    ("sft", {"prompt": 1, "completion": "c"}, "wrong_type", "'prompt' is int, not a string or turns"),
    ("sft", {"prompt": "p", "completion": "  "}, "empty_content", "'completion' is empty"),
    ("sft", {"prompt": "p", "completion": [A("b")]}, "wrong_type",
     "'prompt' is text, 'completion' is turns; use text for all of them or turns for all"),
    ("sft", {"prompt": [U("q")], "completion": "c"}, "wrong_type",
     "'prompt' is turns, 'completion' is text; use text for all of them or turns for all"),
    # preference rows
    ("dpo", {"chosen": "a", "rejected": "b"}, "missing_key", "no 'prompt' (needed unless chosen/rejected are turns)"),
    ("dpo", {"prompt": "", "chosen": "a", "rejected": "b"}, "empty_content", "'prompt' is empty"),
    ("dpo", {"prompt": [U("q"), A("x")], "chosen": [A("a")], "rejected": [A("b")]}, "not_alternating",
     "'prompt' ends with an assistant turn, not user"),
    ("dpo", {"prompt": [U("q")], "chosen": [A("a"), U("more")], "rejected": [A("b")]}, "no_assistant",
     "'chosen' ends with a user turn, not assistant"),
    ("dpo", {"prompt": [U("q")], "chosen": [A("a")], "rejected": [A("b"), U("more")]}, "no_assistant",
     "'rejected' ends with a user turn, not assistant"),
    ("dpo", {"prompt": "p", "chosen": "a", "rejected": " "}, "empty_content", "'rejected' is empty"),
    ("dpo", {"prompt": "p", "chosen": "a", "rejected": "a"}, "identical_pair", "chosen and rejected are identical"),
    ("dpo", {"prompt": "p", "chosen": "a", "rejected": [A("b")]}, "wrong_type",
     "'prompt' is text, 'chosen' is text, 'rejected' is turns; use text for all of them or turns for all"),
    # KTO rows
    ("kto", {"prompt": "", "completion": "c", "label": True}, "empty_content", "'prompt' is empty"),
    ("kto", {"prompt": [U("q"), A("x")], "completion": [A("c")], "label": True}, "not_alternating",
     "'prompt' ends with an assistant turn, not user"),
    ("kto", {"prompt": [U("q")], "completion": "", "label": True}, "empty_content", "'completion' is empty"),
    ("kto", {"prompt": [U("q")], "completion": [A("c"), U("more")], "label": True}, "no_assistant",
     "'completion' ends with a user turn, not assistant"),
    ("kto", {"prompt": "p", "completion": "c", "label": 1}, "wrong_type", "'label' is int 1, not true/false"),
    ("kto", {"prompt": "p", "completion": "c", "label": "yes"}, "wrong_type", "'label' is str 'yes', not true/false"),
])  # fmt: skip
def test_each_malformed_row_is_named_word_for_word_on_its_line(validator, tmp_path, method, row, code, message):
    good = PC if "completion" in row and method == "sft" else GOOD[method]
    if "text" in row:
        good = {"text": "a row"}
    assert issues(validator, tmp_path, [good, row], method, severity="error") == [(2, code, message)]


@pytest.mark.parametrize(("method", "row"), [
    ("sft", {"prompt": [U("q")], "completion": [A("a")]}),
    ("sft", {"prompt": [S("s"), U("q")], "completion": [A("a"), U("q2"), A("b")]}),
    ("dpo", {"prompt": [U("q")], "chosen": [A("a")], "rejected": [A("b")]}),
    ("kto", {"prompt": [U("q")], "completion": [A("c")], "label": False}),
])  # fmt: skip
def test_a_conversational_prompt_with_answers_that_start_with_the_assistant_is_fine(validator, tmp_path, method, row):
    rows = [row, {**row, "label": True}] if method == "kto" else [row]  # both KTO classes: no warning
    assert issues(validator, tmp_path, rows, method) == []


# ----------------------------------------------------------------------------- a whole file


def summary(validator, capsys, path, *args):
    code = validator.main([str(path), *args])
    return code, capsys.readouterr().out.splitlines()


def test_rows_that_are_not_objects_are_counted_and_named(validator, tmp_path, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text("\n".join([json.dumps(CHAT), "{not json", "[1, 2]", "{nor this", '"a string"']) + "\n")
    code, lines = summary(validator, capsys, path)
    assert code == 1
    assert lines[2] == "rows by format: invalid_json=2, not_an_object=2, messages=1"
    assert lines[-5:] == [
        "  line 2: invalid_json: Expecting property name enclosed in double quotes (column 2)",
        "  line 3: wrong_type: row is a JSON list, not an object",
        "  line 4: invalid_json: Expecting property name enclosed in double quotes (column 2)",
        "  line 5: wrong_type: row is a JSON str, not an object",
        "VERDICT: FAIL invalid_rows: 4 of 5 rows do not fit sft (invalid_json=2, wrong_type=2)",
    ]


@pytest.mark.parametrize(("method", "rows", "counts"), [
    ("dpo", [PREF, {"prompt": "p", "chosen": "a"}], "preference=1, unknown=1"),
    ("sft", [PC, {"prompt": "p"}], "prompt_completion=1, unknown=1"),
    ("embedding", [{"anchor": "a", "positive": "b"}, {"anchor": "c"}], "pair=1, unknown=1"),
    ("embedding", [{"sentence1": "a", "sentence2": "b", "score": 0.5}, {"sentence1": "c", "score": 0.5}],
     "scored_pair=1, unknown=1"),
])  # fmt: skip
def test_a_row_with_half_of_a_format_is_of_no_format(validator, tmp_path, capsys, method, rows, counts):
    code, lines = summary(validator, capsys, write_jsonl(tmp_path / "d.jsonl", rows), "--method", method)
    assert code == 1 and lines[2] == f"rows by format: {counts}"
    assert lines[-1].startswith("VERDICT: FAIL invalid_rows: 1 of 2 rows do not fit ")


def test_an_empty_file_has_no_rows(validator, tmp_path):
    (tmp_path / "e.jsonl").write_text("\n  \n")
    assert validator.validate(str(tmp_path / "e.jsonl"), "sft", None).verdict() == (
        False, "empty: the dataset has no rows")


def test_an_unknown_format_lists_the_first_ten_keys_it_saw(validator, tmp_path):
    row = {f"k{i:02}": i for i in range(1, 12)}
    report = validator.validate(write_jsonl(tmp_path / "u.jsonl", [row]), "sft", None)
    assert report.verdict() == (False, (
        "unknown_format: no row looks like messages, text, prompt/completion, preference pairs, KTO, "
        "prompt/answer, anchor/positive pairs, triplets or scored sentence pairs "
        "(keys seen: k01, k02, k03, k04, k05, k06, k07, k08, k09, k10)"))


def test_an_unknown_format_without_a_single_object_saw_no_keys(validator, tmp_path):
    report = validator.validate(write_jsonl(tmp_path / "u.jsonl", [[1], [2]]), "sft", None)
    assert report.verdict()[1].endswith("triplets or scored sentence pairs (keys seen: none)")


def test_a_missing_key_names_every_missing_key_and_the_keys_the_row_has(validator, tmp_path):
    rows = [PREF, {"prompt": "p", "x": 1}, {}]
    assert issues(validator, tmp_path, rows, "dpo") == [
        (2, "missing_key", "no 'chosen', 'rejected' (keys: prompt, x)"),
        (3, "missing_key", "no 'chosen', 'rejected' (keys: -)"),
    ]


def test_a_row_of_another_format_is_named_and_the_rows_after_it_are_still_checked(validator, tmp_path):
    rows = [PC, {**PC, "completion": "d"}, KTO, {"prompt": "p", "completion": ""}]
    assert issues(validator, tmp_path, rows, "sft") == [
        (3, "format_mismatch", "a kto row in a prompt_completion dataset"),
        (4, "empty_content", "'completion' is empty"),
    ]


def test_a_row_of_exactly_the_max_length_is_not_too_long(validator, tmp_path):
    rows = [{"messages": [U("abcd"), A("efgh")]}]  # 8 characters: 2 approx tokens
    assert issues(validator, tmp_path, rows, "sft", max_length=2) == []
    assert issues(validator, tmp_path, rows, "sft", max_length=1) == [(1, "too_long", "~2 tokens > --max-length 1")]


@pytest.mark.usefixtures("any_row_count")
def test_a_score_is_not_text_and_counts_no_tokens(validator, tmp_path):
    rows = [{"sentence1": "abcd", "sentence2": "efgh", "score": 0.5}]
    report = validator.validate(write_jsonl(tmp_path / "s.jsonl", rows), "embedding", None)
    assert report.verdict() == (True, "format=scored_pair method=embedding rows=1 max_tokens~2")


def test_the_same_row_with_its_keys_in_another_order_is_a_duplicate(validator, tmp_path):
    rows = [{"prompt": "p", "completion": "c"}, {"completion": "c", "prompt": "p"}]
    assert issues(validator, tmp_path, rows, "sft") == [(2, "duplicate", "same as line 1")]


def test_blank_lines_are_skipped_and_the_rows_after_them_keep_their_line_numbers(validator, tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps(CHAT) + "\n\n   \n" + json.dumps({"messages": [U("x")]}) + "\n")
    report = validator.validate(str(path), "sft", None)
    assert report.rows == 2
    assert [(i.line, i.code) for i in report.issues] == [(4, "no_assistant")]
