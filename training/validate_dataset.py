# /// script
# requires-python = ">=3.10"
# dependencies = [
#     "datasets>=3.0",
# ]
# ///
"""CPU preflight for a training dataset: does every row fit the training method?

    validate_dataset.py DATASET [--method sft|dpo|kto|grpo|reward|embedding] [--max-length N] [--split S]
                        [--show N] [--json]

Run it as a `cpu-basic` job (about $0.01) before a GPU run. The file is whole by itself (standard
library only, `datasets` for Hub ids and parquet/csv files), so `hf jobs uv run validate_dataset.py
DATA.jsonl` can ship it alone; the training recipes import the same checks from it (through
`jobkit.recipe`) and refuse a dataset it fails.

Output: a summary (format, counts per format and per issue code), the first offending rows with
their line numbers (file lines for JSONL, 1-based row numbers otherwise) and a last line

    VERDICT: PASS format=<f> method=<m> rows=<n> max_tokens~<t>
    VERDICT: FAIL <code>: <reason>

`--json` prints the report as one JSON line instead of the text summary, still followed by the
VERDICT line. Exit status: 0 PASS, 1 the data does not fit the method, 2 the dataset could not be
read or the arguments are wrong.

Over half of failed training runs are format mismatches; every recipe runs the same :func:`validate`
before it trains, so a dataset this preflight passes is one the recipe trains on, and the other way
round.

A dataset is a local JSONL / JSON-array file, or a Hub dataset id (then, and for local
.parquet/.csv files, the `datasets` library is imported; JSONL needs the standard library only, so
the check starts instantly).

Formats detected (per row, then the majority decides the dataset's format):

    messages            {"messages": [{"role": ..., "content": ...}, ...]}        sft
    text                {"text": "..."}                                            sft
    prompt_completion   {"prompt": ..., "completion": ...}                         sft
    preference          {"prompt": ..., "chosen": ..., "rejected": ...}            dpo, reward
    kto                 {"prompt": ..., "completion": ..., "label": true|false}    kto
    prompt_answer       {"prompt": ..., "answer": ...}                             grpo
    pair                {"anchor": ..., "positive": ...}                           embedding
    triplet             {"anchor": ..., "positive": ..., "negative": ...}          embedding
    scored_pair         {"sentence1": ..., "sentence2": ..., "score": 0..1}        embedding

A GRPO row is a prompt (text or turns ending with a user turn) and the answer its rewards check
(a string or a number); the row's other columns are passed to the rewards too (`grpo_lora.py`).

The embedding formats are what sentence-transformers trains on (`sentence_transformer.py`, bi-,
cross- and sparse encoders): every field is one plain string, and a score is a number from 0 to 1.

Row checks (issue codes): `invalid_json`, `wrong_type` (a row, field or turn of the wrong JSON
type, a non-boolean KTO label, a prompt in text with its answer in turns or the other way round),
`missing_key`, `format_mismatch` (a row of another format), `bad_role` (roles are system / user /
assistant), `empty_content`, `not_alternating` (after an optional leading system turn, user and
assistant alternate, starting with user), `no_assistant` (a conversation that does not end with an
assistant turn: nothing to learn), `identical_pair` (chosen == rejected, or two texts of an
embedding row that are the same), `bad_score` (a scored pair's score is not from 0 to 1),
`too_long` (with a max length: the row's text is longer than N tokens). Lengths are approximate tokens, counted as
ceil(characters / 4) over all the row's text, the usual rule of thumb for English with a BPE
tokenizer; no tokenizer is downloaded. Warnings (do not fail): `duplicate` rows, a KTO dataset
with a single label class. A dataset whose rows all fit but are fewer than MIN_ROWS (8) fails
`too_few_rows`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")
"""A Hub repo id, `name` or `org/name` (models and datasets alike; `jobkit.run` reads hub ids with it too)."""

METHOD_FORMATS = {
    "sft": ("messages", "text", "prompt_completion"),
    "dpo": ("preference",),
    "kto": ("kto",),
    "grpo": ("prompt_answer",),
    "reward": ("preference",),
    "embedding": ("pair", "triplet", "scored_pair"),
}
REQUIRED_KEYS = {
    "messages": ("messages",),
    "text": ("text",),
    "prompt_completion": ("prompt", "completion"),
    "preference": ("chosen", "rejected"),
    "kto": ("prompt", "completion", "label"),
    "prompt_answer": ("prompt", "answer"),
    "pair": ("anchor", "positive"),
    "triplet": ("anchor", "positive", "negative"),
    "scored_pair": ("sentence1", "sentence2", "score"),
}
TRAINED_KEYS = {
    "messages": ("messages",),
    "text": ("text",),
    "prompt_completion": ("prompt", "completion"),
    "preference": ("prompt", "chosen", "rejected"),
    "kto": ("prompt", "completion", "label"),
    "prompt_answer": ("prompt", "answer"),
    "pair": ("anchor", "positive"),
    "triplet": ("anchor", "positive", "negative"),
    "scored_pair": ("sentence1", "sentence2", "score"),
}
"""The fields a trainer reads from a row of each format (a preference row's prompt is optional)."""
ROLES = ("system", "user", "assistant")
CHARS_PER_TOKEN = 4
DATASETS_SUFFIXES = (".parquet", ".csv")
"""Local files read through the `datasets` library (JSON and JSONL need the standard library only)."""


@dataclass
class Issue:
    line: int
    code: str
    message: str
    severity: str = "error"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Report:
    dataset: str
    method: str
    max_length: int | None
    unit: str = "line"  # "line" for JSONL files, "row" otherwise
    rows: int = 0
    fmt: str | None = None
    format_counts: Counter[str] = field(default_factory=Counter)
    issues: list[Issue] = field(default_factory=list)
    error_lines: set[int] = field(default_factory=set)
    tokens: list[int] = field(default_factory=list)
    labels: Counter[str] = field(default_factory=Counter)
    fatal: tuple[str, str] | None = None  # (code, reason) that fails the dataset as a whole
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list, repr=False)
    """The rows that are JSON objects, with their line numbers (what a recipe trains on)."""

    def add(self, line: int, code: str, message: str, severity: str = "error") -> None:
        self.issues.append(Issue(line, code, message, severity))
        if severity == "error":
            self.error_lines.add(line)

    def counts(self, severity: str) -> Counter[str]:
        return Counter(i.code for i in self.issues if i.severity == severity)

    def verdict(self) -> tuple[bool, str]:
        if self.fatal is not None:
            return False, f"{self.fatal[0]}: {self.fatal[1]}"
        errors = self.counts("error")
        if errors:
            by_code = ", ".join(f"{c}={n}" for c, n in errors.most_common())
            return False, (
                f"invalid_rows: {len(self.error_lines)} of {self.rows} rows do not fit "
                f"{self.method} ({by_code})"
            )
        max_tokens = max(self.tokens) if self.tokens else 0
        return True, (
            f"format={self.fmt} method={self.method} rows={self.rows} max_tokens~{max_tokens}"
        )


# ----------------------------------------------------------------------------- reading


MIN_ROWS = 8
"""Fewer rows than this fail the dataset (`too_few_rows`): they are two batches or fewer at the LoRA
recipes' default batch of 4 and half of one at the embedding recipe's 16, so every step trains on
the same few rows, the loss falls by learning them by heart and the verdict cannot tell that from
learning (one row trained to a PASS); an embedding run's 0.2 held-out split also keeps a row."""


class ReadError(Exception):
    """The dataset could not be read at all."""


def locate(dataset: str) -> Path | None:
    """The local file `dataset` names, or None for a Hub dataset id.

    Raises ReadError for a folder, a missing file, or a name that is neither.
    """
    path = Path(dataset).expanduser()
    if path.is_file():
        return path
    if path.exists():
        raise ReadError(f"{path} is a folder; give a JSONL file")
    if dataset.endswith((".jsonl", ".json", *DATASETS_SUFFIXES)) or dataset.startswith(
        ("/", ".", "~")
    ):
        raise ReadError(
            f"dataset file {dataset} not found (a job sees only the files shipped with it; "
            "on HF Jobs pass a Hub dataset id or a local file to `hf jobs uv run`)"
        )
    if not REPO_ID_RE.match(dataset):
        raise ReadError(f"{dataset!r} is neither a file nor a Hub id")
    return None


def needs_datasets(dataset: str) -> bool:
    """Whether reading `dataset` imports the `datasets` library: a Hub id or a Parquet/CSV file.

    Raises ReadError as :func:`locate` does.
    """
    path = locate(dataset)
    return path is None or path.suffix.lower() in DATASETS_SUFFIXES


def iter_rows(dataset: str, split: str) -> tuple[str, Iterator[tuple[int, Any, str | None]]]:
    """(unit, rows) where rows yields (line, value, json_error)."""
    path = locate(dataset)
    if path is None:
        path = hub_json_file(dataset, split)
    if path is None:
        return "row", _iter_datasets(dataset, None, split=split)
    suffix = path.suffix.lower()
    if suffix in DATASETS_SUFFIXES:
        return "row", _iter_datasets(suffix.lstrip("."), str(path), split="train")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ReadError(f"cannot read {path}: {e}") from None
    if suffix == ".json" and text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise ReadError(f"{path}: invalid JSON array: {e}") from None
        return "row", ((i + 1, v, None) for i, v in enumerate(data))
    return "line", _iter_jsonl(text)


def _iter_jsonl(text: str) -> Iterator[tuple[int, Any, str | None]]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line), None
        except json.JSONDecodeError as e:
            yield lineno, None, f"{e.msg} (column {e.colno})"


HUB_METADATA_FILES = (".gitattributes", "README.md")


def hub_json_file(dataset: str, split: str) -> Path | None:
    """A Hub dataset held in one JSON / JSONL file, downloaded (through the Hub cache), or None:
    read as a local file is, it is checked line by line, as `validate_dataset.py FILE` checks it,
    instead of failing whole on the first bad line in `datasets`. Anything else (several files,
    Parquet, a split other than train, no answer) is left to `datasets`."""
    if split != "train":
        return None
    try:
        from huggingface_hub import HfApi, hf_hub_download

        files = [f for f in HfApi().list_repo_files(dataset, repo_type="dataset") if f not in HUB_METADATA_FILES]
        if len(files) != 1 or not files[0].lower().endswith((".jsonl", ".json")):
            return None
        # a run with a datasets cache (HF_DATASETS_CACHE on a /data volume) keeps this file there too
        cache = os.environ.get("HF_DATASETS_CACHE")
        where = {"cache_dir": str(Path(cache) / "hub")} if cache else {}
        return Path(hf_hub_download(dataset, files[0], repo_type="dataset", **where))
    except Exception:  # noqa: BLE001 - no huggingface_hub, no repo, no network: `datasets` says why
        return None


def _iter_datasets(
    name: str, data_files: str | None, split: str
) -> Iterator[tuple[int, Any, str | None]]:
    try:
        from datasets import load_dataset
    except ImportError:
        raise ReadError("reading Hub datasets needs the `datasets` package") from None
    try:
        if data_files is not None:
            ds = load_dataset(name, data_files=data_files, split=split)
        else:
            ds = load_dataset(name, split=split)
    except Exception as e:  # network, missing repo, missing split ...
        raise ReadError(f"cannot load {name}: {type(e).__name__}: {e}") from None
    return ((i + 1, row, None) for i, row in enumerate(ds))


# ----------------------------------------------------------------------------- row checks


def row_format(row: dict[str, Any]) -> str | None:
    if "messages" in row:
        return "messages"
    if "chosen" in row and "rejected" in row:
        return "preference"
    if "label" in row and "completion" in row:
        return "kto"
    if "prompt" in row and "completion" in row:
        return "prompt_completion"
    if "prompt" in row and "answer" in row:
        return "prompt_answer"
    if "anchor" in row and "positive" in row:
        return "triplet" if "negative" in row else "pair"
    if "sentence1" in row and "sentence2" in row:
        return "scored_pair"
    if "text" in row:
        return "text"
    return None


def text_chars(value: Any) -> int:
    """Characters of text in a field (a string or a list of turns)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(
            len(t["content"])
            for t in value
            if isinstance(t, dict) and isinstance(t.get("content"), str)
        )
    return 0


def approx_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def check_turns(
    report: Report,
    line: int,
    key: str,
    turns: Any,
    *,
    must_end_with: str | None,
    first: str | None = "user",
) -> None:
    """A list of chat turns: types, roles, empty content, alternation, who speaks last.

    `first` is the role the conversation must start with after an optional system turn (None:
    either; a completion or a chosen/rejected answer may start with the assistant).
    """
    if not isinstance(turns, list):
        report.add(line, "wrong_type", f"'{key}' is {type(turns).__name__}, not a list of turns")
        return
    if not turns:
        report.add(line, "empty_content", f"'{key}' has no turns")
        return
    roles: list[str] = []
    for i, turn in enumerate(turns):
        where = f"{key}[{i}]"
        if not isinstance(turn, dict):
            report.add(line, "wrong_type", f"{where} is {type(turn).__name__}, not an object")
            return
        missing = [k for k in ("role", "content") if k not in turn]
        if missing:
            report.add(line, "missing_key", f"{where} has no {', '.join(repr(m) for m in missing)}")
            return
        role, content = turn["role"], turn["content"]
        if not isinstance(role, str):
            report.add(line, "wrong_type", f"{where}.role is {type(role).__name__}, not a string")
            return
        if role not in ROLES:
            report.add(line, "bad_role", f"{where}.role is {role!r}; use system, user or assistant")
            return
        if not isinstance(content, str):
            report.add(
                line, "wrong_type", f"{where}.content is {type(content).__name__}, not a string"
            )
            return
        if not content.strip():
            report.add(line, "empty_content", f"{where} ({role}) has empty content")
            return
        roles.append(role)
    body = roles[1:] if roles[0] == "system" else roles
    if "system" in body:
        report.add(line, "not_alternating", f"'{key}': a system turn after the first turn")
        return
    expected = first or (body[0] if body else "user")
    for i, role in enumerate(body):
        if role != expected:
            at = i + (len(roles) - len(body))
            report.add(
                line,
                "not_alternating",
                f"'{key}': turn {at} is {role!r} where {expected!r} was expected "
                f"(roles: {', '.join(roles)})",
            )
            return
        expected = "assistant" if role == "user" else "user"
    if must_end_with and (not body or body[-1] != must_end_with):
        last = body[-1] if body else "system"
        code = "no_assistant" if must_end_with == "assistant" else "not_alternating"
        article = "an" if last == "assistant" else "a"
        report.add(line, code, f"'{key}' ends with {article} {last} turn, not {must_end_with}")


def check_text_or_turns(
    report: Report,
    line: int,
    row: dict[str, Any],
    key: str,
    *,
    ends: str | None,
    first: str | None = "user",
) -> None:
    value = row[key]
    if isinstance(value, str):
        if not value.strip():
            report.add(line, "empty_content", f"'{key}' is empty")
    elif isinstance(value, list):
        check_turns(report, line, key, value, must_end_with=ends, first=first)
    else:
        report.add(line, "wrong_type", f"'{key}' is {type(value).__name__}, not a string or turns")


def check_same_kind(report: Report, line: int, row: dict[str, Any], keys: Iterable[str]) -> None:
    """A prompt and its answers are all text or all turns: the trainers apply a chat template to
    every field of a row or to none, so a mix cannot be tokenized."""
    kinds = {k: "text" if isinstance(row[k], str) else "turns" for k in keys if k in row}
    if len(set(kinds.values())) > 1:
        described = ", ".join(f"'{k}' is {v}" for k, v in kinds.items())
        report.add(line, "wrong_type", f"{described}; use text for all of them or turns for all")


def check_row(report: Report, line: int, row: dict[str, Any], fmt: str) -> None:
    errors_before = len(report.error_lines)
    if fmt == "messages":
        check_turns(report, line, "messages", row["messages"], must_end_with="assistant")
    elif fmt == "text":
        check_text_or_turns(report, line, row, "text", ends=None)
        if isinstance(row["text"], list):
            report.add(line, "wrong_type", "'text' is a list; use 'messages' for conversations")
    elif fmt == "prompt_completion":
        check_text_or_turns(report, line, row, "prompt", ends="user")
        check_text_or_turns(report, line, row, "completion", ends="assistant", first=None)
    elif fmt == "preference":
        if "prompt" in row:
            check_text_or_turns(report, line, row, "prompt", ends="user")
        elif not isinstance(row["chosen"], list):
            report.add(line, "missing_key", "no 'prompt' (needed unless chosen/rejected are turns)")
        check_text_or_turns(report, line, row, "chosen", ends="assistant", first=None)
        check_text_or_turns(report, line, row, "rejected", ends="assistant", first=None)
        if row["chosen"] == row["rejected"]:
            report.add(line, "identical_pair", "chosen and rejected are identical")
    elif fmt == "kto":
        check_text_or_turns(report, line, row, "prompt", ends="user")
        check_text_or_turns(report, line, row, "completion", ends="assistant", first=None)
        label = row["label"]
        if not isinstance(label, bool):
            report.add(
                line, "wrong_type", f"'label' is {type(label).__name__} {label!r}, not true/false"
            )
        else:
            report.labels[str(label).lower()] += 1
    elif fmt == "prompt_answer":
        check_text_or_turns(report, line, row, "prompt", ends="user")
        answer = row["answer"]
        if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
            report.add(line, "wrong_type", f"'answer' is {type(answer).__name__}, not a string or a number")
        elif isinstance(answer, str) and not answer.strip():
            report.add(line, "empty_content", "'answer' is empty")
        return
    elif fmt in METHOD_FORMATS["embedding"]:
        check_embedding_row(report, line, row, fmt)
        return
    if fmt not in ("messages", "text") and len(report.error_lines) == errors_before:
        check_same_kind(report, line, row, [k for k in TRAINED_KEYS[fmt] if k != "label"])


def check_embedding_row(report: Report, line: int, row: dict[str, Any], fmt: str) -> None:
    """An embedding row: every text a non-empty string, texts that differ, a score from 0 to 1."""
    keys = [k for k in REQUIRED_KEYS[fmt] if k != "score"]
    for key in keys:
        value = row[key]
        if not isinstance(value, str):
            report.add(line, "wrong_type", f"'{key}' is {type(value).__name__}, not a string")
            return
        if not value.strip():
            report.add(line, "empty_content", f"'{key}' is empty")
            return
    same = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1 :] if row[a].strip() == row[b].strip()]
    if same:
        a, b = same[0]
        report.add(line, "identical_pair", f"'{a}' and '{b}' are the same text: nothing to learn from it")
        return
    if fmt == "scored_pair":
        score = row["score"]
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            report.add(line, "wrong_type", f"'score' is {type(score).__name__} {score!r}, not a number")
        elif not 0.0 <= score <= 1.0:  # NaN fails this too
            report.add(line, "bad_score", f"'score' is {score!r}; use a number from 0 to 1")


def check_rows(
    rows: Iterable[tuple[int, Any, str | None]],
    *,
    dataset: str,
    method: str,
    max_length: int | None,
    unit: str = "line",
) -> Report:
    """Check rows (line, value, json_error) as read by :func:`iter_rows`."""
    report = Report(dataset=dataset, method=method, max_length=max_length, unit=unit)
    parsed = report.records
    for line, value, json_error in rows:
        report.rows += 1
        if json_error is not None:
            report.add(line, "invalid_json", json_error)
            report.format_counts["invalid_json"] += 1
            continue
        if not isinstance(value, dict):
            report.add(line, "wrong_type", f"row is a JSON {type(value).__name__}, not an object")
            report.format_counts["not_an_object"] += 1
            continue
        report.format_counts[row_format(value) or "unknown"] += 1
        parsed.append((line, value))

    if report.rows == 0:
        report.fatal = ("empty", "the dataset has no rows")
        return report
    known = Counter({k: v for k, v in report.format_counts.items() if k in REQUIRED_KEYS})
    if not known:
        report.fatal = (
            "unknown_format",
            "no row looks like messages, text, prompt/completion, preference pairs, KTO, prompt/answer, "
            "anchor/positive pairs, triplets or scored sentence pairs "
            "(keys seen: "
            + ", ".join(sorted({k for _, r in parsed for k in r})[:10] or ["none"])
            + ")",
        )
        return report
    fmt = known.most_common(1)[0][0]
    report.fmt = fmt

    seen: dict[str, int] = {}
    for line, row in parsed:
        got = row_format(row)
        missing = [k for k in REQUIRED_KEYS[fmt] if k not in row]
        if missing:
            report.add(
                line,
                "missing_key",
                f"no {', '.join(repr(m) for m in missing)} (keys: {', '.join(sorted(row)) or '-'})",
            )
            continue
        if got != fmt:
            report.add(line, "format_mismatch", f"a {got} row in a {fmt} dataset")
            continue
        check_row(report, line, row, fmt)
        chars = sum(text_chars(row[k]) for k in ("prompt", *REQUIRED_KEYS[fmt]) if k in row)
        tokens = approx_tokens(chars)
        report.tokens.append(tokens)
        if max_length is not None and tokens > max_length:
            report.add(line, "too_long", f"~{tokens} tokens > --max-length {max_length}")
        key = json.dumps(row, sort_keys=True, ensure_ascii=False, default=str)
        if key in seen:
            report.add(line, "duplicate", f"same as {report.unit} {seen[key]}", "warning")
        else:
            seen[key] = line

    if report.rows < MIN_ROWS and not report.error_lines:
        report.fatal = ("too_few_rows", f"{report.rows} rows, at least {MIN_ROWS} needed")
        return report
    if fmt == "kto" and len(report.labels) == 1:
        only = next(iter(report.labels))
        report.add(0, "single_label", f"every label is {only}; KTO wants both classes", "warning")
    if fmt not in METHOD_FORMATS[method]:
        fits = [m for m, fmts in METHOD_FORMATS.items() if fmt in fmts]
        report.fatal = (
            "method_mismatch",
            f"{fmt} rows do not fit {method} (which needs "
            f"{' / '.join(METHOD_FORMATS[method])}); this data fits {', '.join(fits)}",
        )
    return report


def validate(dataset: str, method: str, max_length: int | None, split: str = "train") -> Report:
    """Read `dataset` and check every row against `method` (raises ReadError if unreadable)."""
    unit, rows = iter_rows(dataset, split)
    return check_rows(rows, dataset=dataset, method=method, max_length=max_length, unit=unit)


def training_rows(report: Report) -> list[dict[str, Any]]:
    """The rows of a dataset that passed, with only the fields its format trains on.

    Extra columns are dropped and turns keep only `role` and `content`, so every row has the same
    shape (a `datasets.Dataset` needs one).
    """
    fmt = report.fmt
    assert fmt is not None and report.verdict()[0], "training_rows needs a report that passed"
    keys = TRAINED_KEYS[fmt]
    return [{k: _plain(row[k]) for k in keys if k in row} for _, row in report.records]


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [{"role": t["role"], "content": t["content"]} for t in value]
    return value


# ----------------------------------------------------------------------------- output


def issue_order(issue: Issue) -> tuple[bool, int]:
    """Errors first, then by line."""
    return (issue.severity != "error", issue.line)


def offending_rows(report: Report, show: int) -> list[str]:
    """The first `show` issues, one line each: `line 12: bad_role: ...` (errors first)."""
    out = []
    for issue in sorted(report.issues, key=issue_order)[:show]:
        where = f"{report.unit} {issue.line}" if issue.line else "dataset"
        tag = "" if issue.severity == "error" else " (warning)"
        out.append(f"{where}: {issue.code}{tag}: {issue.message}")
    return out


def failure(report: Report) -> str:
    """Why a dataset failed, in one line: the verdict's reason, then the first offending row."""
    passed, reason = report.verdict()
    assert not passed
    if report.fatal is None and report.error_lines:
        reason += f"; first: {offending_rows(report, 1)[0]}"
    return reason


def as_json(report: Report, show: int) -> dict[str, Any]:
    passed, reason = report.verdict()
    tokens = report.tokens
    return {
        "dataset": report.dataset,
        "method": report.method,
        "format": report.fmt,
        "unit": report.unit,
        "rows": report.rows,
        "error_rows": len(report.error_lines),
        "valid_rows": report.rows - len(report.error_lines),
        "format_counts": dict(report.format_counts),
        "errors": dict(report.counts("error")),
        "warnings": dict(report.counts("warning")),
        "issues": [i.as_dict() for i in sorted(report.issues, key=issue_order)[:show]],
        "approx_tokens": {
            "unit": f"ceil(chars/{CHARS_PER_TOKEN})",
            "max": max(tokens) if tokens else 0,
            "mean": round(sum(tokens) / len(tokens), 1) if tokens else 0,
        },
        "max_length": report.max_length,
        "kto_labels": dict(report.labels) or None,
        "passed": passed,
        "verdict": ("PASS " if passed else "FAIL ") + reason,
    }


def text_summary(report: Report, show: int) -> list[str]:
    """The human-readable report, line by line (without the VERDICT line)."""
    data = as_json(report, show)
    out = [
        f"dataset {report.dataset} ({report.rows} rows)",
        f"format: {report.fmt or 'unknown'}   method: {report.method}",
    ]
    if report.format_counts:
        counts = ", ".join(f"{k}={v}" for k, v in report.format_counts.most_common())
        out.append(f"rows by format: {counts}")
    tok = data["approx_tokens"]
    limit = f" (limit {report.max_length})" if report.max_length else ""
    out.append(
        f"approx tokens per row (chars/{CHARS_PER_TOKEN}): max {tok['max']}, "
        f"mean {tok['mean']}{limit}"
    )
    if report.labels:
        out.append("kto labels: " + ", ".join(f"{k}={v}" for k, v in sorted(report.labels.items())))
    errors, warnings = report.counts("error"), report.counts("warning")
    out.append(f"valid rows: {data['valid_rows']}   rows with errors: {data['error_rows']}")
    if errors:
        out.append("errors: " + ", ".join(f"{c}={n}" for c, n in errors.most_common()))
    if warnings:
        out.append("warnings: " + ", ".join(f"{c}={n}" for c, n in warnings.most_common()))
    if report.issues:
        total = len(report.issues)
        out.append(f"first offending rows ({min(show, total)} of {total}):")
        out.extend(f"  {line}" for line in offending_rows(report, show))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="validate_dataset.py",
        description="Check that every row of a dataset fits a training method "
        "(TRL sft, dpo, kto, grpo, reward; sentence-transformers embedding).",
    )
    parser.add_argument("dataset", help="local JSONL/JSON file or Hub dataset id")
    parser.add_argument("--method", choices=tuple(METHOD_FORMATS), default="sft")
    parser.add_argument(
        "--max-length",
        type=int,
        default=None,
        help=f"flag rows longer than N approx tokens (chars/{CHARS_PER_TOKEN})",
    )
    parser.add_argument("--split", default="train", help="split of a Hub dataset")
    parser.add_argument("--show", type=int, default=10, help="offending rows to list")
    parser.add_argument("--json", action="store_true", help="one JSON line, then the VERDICT")
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        if e.code not in (0, None):
            print("VERDICT: FAIL bad_arguments: see usage above", flush=True)
        raise
    if args.max_length is not None and args.max_length <= 0:
        print("VERDICT: FAIL bad_arguments: --max-length must be positive")
        return 2
    try:
        report = validate(args.dataset, args.method, args.max_length, args.split)
    except ReadError as e:
        if args.json:
            print(json.dumps({"dataset": args.dataset, "passed": False, "error": str(e)}))
        else:
            print(f"error: {e}", file=sys.stderr)
        print(f"VERDICT: FAIL unreadable: {e}", flush=True)
        return 2
    if args.json:
        print(json.dumps(as_json(report, args.show), ensure_ascii=False))
    else:
        print("\n".join(text_summary(report, args.show)))
    passed, reason = report.verdict()
    print(f"VERDICT: {'PASS' if passed else 'FAIL'} {reason}", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
