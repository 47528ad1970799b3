"""The text rules of a repo's files: a README's card metadata, `.gitignore` and `.gitattributes`
patterns (which files a commit skips, which go to LFS), the names of repo types and refs. Pure
functions, no I/O."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from console.server.jobs.wire import ApiError

REPO_TYPES = ("model", "dataset")
MAX_REGULAR_BYTES = 10 * 1024 * 1024
"""A file this big or bigger is uploaded as LFS (through Xet), as on the Hub."""
LFS_SUFFIXES = (
    ".7z", ".arrow", ".bin", ".bz2", ".ckpt", ".ftz", ".gz", ".h5", ".joblib", ".mlmodel", ".model",
    ".msgpack", ".npy", ".npz", ".onnx", ".ot", ".parquet", ".pb", ".pickle", ".pkl", ".pt", ".pth",
    ".rar", ".safetensors", ".tar", ".tflite", ".tgz", ".wasm", ".xz", ".zip", ".zst",
)
GITATTRIBUTES = "".join(f"*{s} filter=lfs diff=lfs merge=lfs -text\n" for s in LFS_SUFFIXES)
"""The .gitattributes of a new repo's first commit (the Hub writes one too)."""


def check_type(repo_type: Any) -> str:
    if repo_type is None:
        return "model"
    if repo_type not in REPO_TYPES:
        raise ApiError(400, f"type: expected one of {', '.join(REPO_TYPES)}, got {str(repo_type)[:40]!r}")
    return repo_type


def check_ref_name(name: Any, field: str) -> str:
    """A branch or tag name: what git allows, less what would make a URL ambiguous."""
    if (
        not isinstance(name, str) or not name or len(name) > 200 or name.startswith(("/", "-", "refs/"))
        or name.endswith(("/", ".lock", ".")) or ".." in name or "//" in name or "@{" in name
        or any(ch < " " or ch in " ~^:?*[\\\x7f" for ch in name)
    ):
        raise ApiError(400, f"{field}: invalid name {str(name)[:100]!r}")
    return name


_FRONT_MATTER = re.compile(r"\A\ufeff?\s*---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*$", re.DOTALL | re.MULTILINE)


def card_data(content: str) -> dict[str, Any] | None:
    """A README's YAML metadata as a mapping (the Hub's `cardData`), or None when it has none
    or it is not a valid YAML mapping."""
    import yaml  # huggingface_hub's own dependency

    match = _FRONT_MATTER.match(content)
    if match is None:
        return None
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    return json.loads(json.dumps(data, default=str))  # dates and the like as the text they were


def card_tags(data: dict[str, Any]) -> list[str]:
    """The tags the Hub lists for a repo from its card: the card's own `tags`, its `library_name`,
    and `license:`, `dataset:`, `base_model:` and `language` tags from those fields."""
    def strings(value: Any) -> list[str]:
        items = value if isinstance(value, list) else [value]
        return [str(v) for v in items if isinstance(v, (str, int, float)) and not isinstance(v, bool)]

    tags = strings(data.get("tags", []))
    tags += strings(data.get("library_name", []))
    tags += [f"license:{v}" for v in strings(data.get("license", []))]
    tags += [f"dataset:{v}" for v in strings(data.get("datasets", []))]
    tags += [f"base_model:{v}" for v in strings(data.get("base_model", []))]
    tags += strings(data.get("language", []))
    return list(dict.fromkeys(tags))


def check_card_metadata(content: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(errors, warnings) of a README's YAML metadata, as the Hub's `validate-yaml` gives them:
    a warning when there is none, an error when it is not a YAML mapping or its `model-index`
    is not a list (the Hub checks more fields than this)."""
    import yaml  # huggingface_hub's own dependency

    match = _FRONT_MATTER.match(content)
    if match is None or not match.group(1).strip():
        return [], [{"message": "empty or missing yaml metadata in repo card"}]
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        return [{"message": f"the metadata is not valid YAML: {str(exc)[:300]}"}], []
    if data is None:
        return [], [{"message": "empty or missing yaml metadata in repo card"}]
    if not isinstance(data, dict):
        return [{"message": "the metadata must be a YAML mapping"}], []
    if "model-index" in data and not isinstance(data["model-index"], list):
        return [{"message": '"model-index" must be an array'}], []
    return [], []


def _glob_regex(pattern: str) -> str:
    """A gitignore / gitattributes glob as a regex fragment (`*` stays within a folder, `**` does not)."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif ch == "*":
            out.append("[^/]*")
            i += 1
        elif ch == "?":
            out.append("[^/]")
            i += 1
        elif ch == "[" and "]" in pattern[i + 2:]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
            i = end + 1
        elif ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(ch))
            i += 1
    return "".join(out)


def gitignore_matcher(text: str) -> Callable[[str], bool]:
    """Whether a repo path is ignored by a `.gitignore` (the last matching rule wins; `!` re-includes;
    a rule with a `/` is anchored at the root; a trailing `/` matches folders only)."""
    rules: list[tuple[re.Pattern[str], bool]] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        line = line[1:] if negate else line
        folder_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        body = _glob_regex(line.lstrip("/"))
        lead = "" if anchored else "(?:.*/)?"
        tail = "/.+" if folder_only else "(?:/.*)?"
        try:
            rules.append((re.compile(f"^{lead}{body}{tail}$", re.DOTALL), not negate))
        except re.error:
            continue

    def ignored(path: str) -> bool:
        verdict = False
        for rx, value in rules:
            if rx.match(path):
                verdict = value
        return verdict

    return ignored


def lfs_matcher(gitattributes: str) -> Callable[[str], bool]:
    """Whether a `.gitattributes` puts a path under `filter=lfs` (the last line naming the filter
    for a matching pattern wins; a pattern without a `/` matches the file name in any folder)."""
    rules: list[tuple[re.Pattern[str], bool]] = []
    for raw in gitattributes.splitlines():
        fields = raw.split()
        if not fields or fields[0].startswith("#"):
            continue
        pattern, attrs = fields[0], fields[1:]
        value = None
        for attr in attrs:
            if attr == "filter=lfs":
                value = True
            elif attr in ("-filter", "!filter") or attr.startswith("filter="):
                value = False
        if value is None:
            continue
        lead = "" if "/" in pattern.rstrip("/") else "(?:.*/)?"
        try:
            rules.append((re.compile(f"^{lead}{_glob_regex(pattern.lstrip('/'))}$", re.DOTALL), value))
        except re.error:
            continue

    def lfs(path: str) -> bool:
        verdict = False
        for rx, value in rules:
            if rx.match(path):
                verdict = value
        return verdict

    return lfs
