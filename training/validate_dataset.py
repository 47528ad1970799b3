# /// script
# requires-python = ">=3.10"
# dependencies = [
#     "datasets>=3.0",
# ]
# ///
"""CPU preflight for a training dataset: does every row fit the training method?

    validate_dataset.py DATASET [--method sft|dpo|kto] [--max-length N] [--split S] [--json]

Run it as a `cpu-basic` job (about $0.01) before a GPU run: over half of failed training runs are
format mismatches. DATASET is a local JSONL / JSON-array file, or a Hub dataset id (then, and for
local .parquet/.csv files, the `datasets` library is imported; JSONL needs the standard library
only, so the check starts instantly).

Formats detected (per row, then the majority decides the dataset's format):

    messages            {"messages": [{"role": ..., "content": ...}, ...]}        sft
    text                {"text": "..."}                                            sft
    prompt_completion   {"prompt": ..., "completion": ...}                         sft
    preference          {"prompt": ..., "chosen": ..., "rejected": ...}            dpo
    kto                 {"prompt": ..., "completion": ..., "label": true|false}    kto

Row checks (issue codes): `invalid_json`, `wrong_type` (a row, field or turn of the wrong JSON
type, a non-boolean KTO label), `missing_key`, `format_mismatch` (a row of another format),
`bad_role` (roles are system / user / assistant), `empty_content`, `not_alternating` (after an
optional leading system turn, user and assistant alternate, starting with user), `no_assistant`
(a conversation that does not end with an assistant turn: nothing to learn), `identical_pair`
(chosen == rejected), `too_long` (with --max-length: the row's text is longer than N tokens).
Lengths are approximate tokens, counted as ceil(characters / 4) over all the row's text, the usual
rule of thumb for English with a BPE tokenizer; no tokenizer is downloaded.
Warnings (do not fail): `duplicate` rows, a KTO dataset with a single label class.

Output: a summary (format, counts per format and per issue code), the first offending rows with
their line numbers (file lines for JSONL, 1-based row numbers otherwise) and a last line

    VERDICT: PASS format=<f> method=<m> rows=<n> max_tokens~<t>
    VERDICT: FAIL <code>: <reason>

`--json` prints the report as one JSON line instead of the text summary, still followed by the
VERDICT line. Exit status: 0 PASS, 1 the data does not fit the method, 2 the dataset could not be
read or the arguments are wrong.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

METHOD_FORMATS = {
    "sft": ("messages", "text", "prompt_completion"),
    "dpo": ("preference",),
    "kto": ("kto",),
}
REQUIRED_KEYS = {
    "messages": ("messages",),
    "text": ("text",),
    "prompt_completion": ("prompt", "completion"),
    "preference": ("chosen", "rejected"),
    "kto": ("prompt", "completion", "label"),
}
ROLES = ("system", "user", "assistant")
CHARS_PER_TOKEN = 4


@dataclass
class Issue:
    line: int
    code: str
    message: str
    severity: str = "error"

    def as_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "code": self.code,
            "message": self.message,
            "severity": self.severity,
        }


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


class ReadError(Exception):
    """The dataset could not be read at all."""


def iter_rows(dataset: str, split: str) -> tuple[str, Iterator[tuple[int, Any, str | None]]]:
    """(unit, rows) where rows yields (line, value, json_error)."""
    path = Path(dataset).expanduser()
    if path.is_file():
        suffix = path.suffix.lower()
        if suffix in (".parquet", ".csv"):
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
    if path.exists():
        raise ReadError(f"{path} is not a file")
    if dataset.endswith((".jsonl", ".json", ".parquet", ".csv")) or dataset.startswith(
        ("/", ".", "~")
    ):
        raise ReadError(f"dataset file {dataset} not found")
    return "row", _iter_datasets(dataset, None, split=split)


def _iter_jsonl(text: str) -> Iterator[tuple[int, Any, str | None]]:
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line), None
        except json.JSONDecodeError as e:
            yield lineno, None, f"{e.msg} (column {e.colno})"


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
        report.add(line, code, f"'{key}' ends with a {last} turn, not {must_end_with}")


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


def check_row(report: Report, line: int, row: dict[str, Any], fmt: str) -> None:
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


def validate(dataset: str, method: str, max_length: int | None, split: str = "train") -> Report:
    report = Report(dataset=dataset, method=method, max_length=max_length)
    unit, rows = iter_rows(dataset, split)
    report.unit = unit
    parsed: list[tuple[int, dict[str, Any]]] = []
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
            "no row looks like messages, text, prompt/completion, preference pairs or KTO "
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
        key = json.dumps(row, sort_keys=True, ensure_ascii=False)
        if key in seen:
            report.add(line, "duplicate", f"same as {report.unit} {seen[key]}", "warning")
        else:
            seen[key] = line

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


# ----------------------------------------------------------------------------- output


def issue_order(issue: Issue) -> tuple[bool, int]:
    """Errors first, then by line."""
    return (issue.severity != "error", issue.line)


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


def print_text(report: Report, show: int) -> None:
    data = as_json(report, show)
    print(f"dataset {report.dataset} ({report.rows} rows)")
    print(f"format: {report.fmt or 'unknown'}   method: {report.method}")
    if report.format_counts:
        counts = ", ".join(f"{k}={v}" for k, v in report.format_counts.most_common())
        print(f"rows by format: {counts}")
    tok = data["approx_tokens"]
    limit = f" (limit {report.max_length})" if report.max_length else ""
    print(
        f"approx tokens per row (chars/{CHARS_PER_TOKEN}): max {tok['max']}, "
        f"mean {tok['mean']}{limit}"
    )
    if report.labels:
        print("kto labels: " + ", ".join(f"{k}={v}" for k, v in sorted(report.labels.items())))
    errors, warnings = report.counts("error"), report.counts("warning")
    print(f"valid rows: {data['valid_rows']}   rows with errors: {data['error_rows']}")
    if errors:
        print("errors: " + ", ".join(f"{c}={n}" for c, n in errors.most_common()))
    if warnings:
        print("warnings: " + ", ".join(f"{c}={n}" for c, n in warnings.most_common()))
    if report.issues:
        total = len(report.issues)
        print(f"first offending rows ({min(show, total)} of {total}):")
        for issue in sorted(report.issues, key=issue_order)[:show]:
            where = f"{report.unit} {issue.line}" if issue.line else "dataset"
            tag = "" if issue.severity == "error" else " (warning)"
            print(f"  {where}: {issue.code}{tag}: {issue.message}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="validate_dataset.py",
        description="Check that every row of a dataset fits a TRL training method.",
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
        print_text(report, args.show)
    passed, reason = report.verdict()
    print(f"VERDICT: {'PASS' if passed else 'FAIL'} {reason}", flush=True)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
