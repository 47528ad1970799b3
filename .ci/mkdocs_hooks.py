"""MkDocs hooks: the project's notes that live outside `docs/` join the site.

TESTING.md, RELIABILITY.md, BENCHMARKS.md and training/README.md stay where they are in the
repository. A page links one as it lies there (`../TESTING.md` from a page of `docs/`), so the link
works in a checkout and on a forge; here each note is added to the site as a page under `project/`,
and every link to it is pointed at that page. Links inside a note are read from where the note
lies: one into `docs/` goes to that page of the site. A link that reaches nothing is left as it is,
for `mkdocs build --strict` to fail on.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

NOTES = {
    "TESTING.md": "project/TESTING.md",
    "RELIABILITY.md": "project/RELIABILITY.md",
    "BENCHMARKS.md": "project/BENCHMARKS.md",
    "training/README.md": "project/training-recipes.md",
}
"""The note's path in the repository -> its page in the site."""

SOURCE = {page: path for path, page in NOTES.items()}

LINK = re.compile(r"\]\((?P<target>[^)\s#]+)(?P<anchor>#[^)\s]*)?\)")


def on_files(files, config):
    root = Path(config["config_file_path"]).parent
    for path, page in NOTES.items():
        files.append(File.generated(config, page, abs_src_path=str(root / path)))
    return files


def _site_path(target: str, page_uri: str) -> str | None:
    """The site page a link of the page at `page_uri` reaches, where it reaches a note or, from a
    note, a page of `docs/`; None to leave the link as written."""
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    lies = SOURCE.get(page_uri, posixpath.join("docs", page_uri))  # where the page lies in the repo
    reached = posixpath.normpath(posixpath.join(posixpath.dirname(lies), target))
    if reached in NOTES:
        return NOTES[reached]
    if page_uri in SOURCE and reached.startswith("docs/"):
        return reached.removeprefix("docs/")
    return None


def on_page_markdown(markdown, page, config, files):
    here = posixpath.dirname(page.file.src_uri)

    def point(match: re.Match) -> str:
        site = _site_path(match["target"], page.file.src_uri)
        if site is None:
            return match[0]
        return f"]({posixpath.relpath(site, here or '.')}{match['anchor'] or ''})"

    return LINK.sub(point, markdown)
