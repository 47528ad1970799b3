# /// script
# requires-python = ">=3.10"
# dependencies = [
#     "datasets>=3.0",
# ]
# ///
"""CPU preflight for a training dataset: does every row fit the training method?

    validate_dataset.py DATASET [--method sft|dpo|kto|embedding] [--max-length N] [--split S] [--show N] [--json]

Run it as a `cpu-basic` job (about $0.01) before a GPU run. The checks, the formats and the issue
codes live in `jobkit/dataset.py` beside this file (the training recipes run the same checks before
they train); this script prints their report.

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
import sys
from pathlib import Path

# jobkit/ sits beside this file; Python puts a script's folder on sys.path, but not when the file
# is loaded by path (importlib), so make sure of it.
_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

try:
    from jobkit.dataset import CHARS_PER_TOKEN, METHOD_FORMATS, ReadError, as_json, text_summary, validate
except ImportError as e:  # the script was shipped without its folder: still end with a verdict
    print(f"VERDICT: FAIL missing_files: {e}; ship the whole training/ folder with the job", flush=True)
    sys.exit(2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="validate_dataset.py",
        description="Check that every row of a dataset fits a training method "
        "(TRL sft, dpo, kto; sentence-transformers embedding).",
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
