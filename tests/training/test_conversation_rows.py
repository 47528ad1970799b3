"""What the dataset validator says about each malformed conversation row, word for word: the code
and the message a user reads in "first offending rows", on the row's own line."""

from __future__ import annotations

import json

import pytest


def U(c):
    return {"role": "user", "content": c}


def A(c):
    return {"role": "assistant", "content": c}


def S(c):
    return {"role": "system", "content": c}


GOOD = {"messages": [U("hi"), A("hello")]}


@pytest.mark.parametrize(("messages", "code", "message"), [
    ("hi", "wrong_type", "'messages' is str, not a list of turns"),
    ([], "empty_content", "'messages' has no turns"),
    (["hi", A("x")], "wrong_type", "messages[0] is str, not an object"),
    ([{"content": "hi"}, A("x")], "missing_key", "messages[0] has no 'role'"),
    ([{"role": "user"}, A("x")], "missing_key", "messages[0] has no 'content'"),
    ([U("a"), {}], "missing_key", "messages[1] has no 'role', 'content'"),
    ([{"role": 3, "content": "hi"}, A("x")], "wrong_type", "messages[0].role is int, not a string"),
    ([U(5), A("x")], "wrong_type", "messages[0].content is int, not a string"),
    ([U(" "), A("x")], "empty_content", "messages[0] (user) has empty content"),
    ([U("a"), S("b"), A("x")], "not_alternating", "'messages': a system turn after the first turn"),
    ([U("a"), U("b"), A("x")], "not_alternating",
     "'messages': turn 1 is 'user' where 'assistant' was expected (roles: user, user, assistant)"),
    ([S("s"), U("a"), U("b"), A("x")], "not_alternating",
     "'messages': turn 2 is 'user' where 'assistant' was expected (roles: system, user, user, assistant)"),
    ([A("x"), U("a")], "not_alternating",
     "'messages': turn 0 is 'assistant' where 'user' was expected (roles: assistant, user)"),
    ([U("a")], "no_assistant", "'messages' ends with a user turn, not assistant"),
    ([S("s"), U("a"), A("b"), U("c")], "no_assistant", "'messages' ends with a user turn, not assistant"),
    ([S("s")], "no_assistant", "'messages' ends with a system turn, not assistant"),
])
def test_each_malformed_conversation_is_named_on_its_line(validator, tmp_path, messages, code, message):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(GOOD) + "\n" + json.dumps({"messages": messages}) + "\n")
    report = validator.validate(str(path), "sft", None)
    assert [(i.line, i.code, i.message) for i in report.issues] == [(2, code, message)]


def test_a_system_turn_first_then_alternating_turns_is_fine(validator, tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"messages": [S("be brief"), U("hi"), A("hello"), U("bye"), A("bye")]}) + "\n")
    assert validator.validate(str(path), "sft", None).issues == []
