"""The docs say what the app does: the key table of docs/keys.md and the README's short one are the
app's bindings, the configuration page lists every config key, the README and the project's notes
link only to files that exist, and the manual (mkdocs.yml, docs/) builds with every link checked."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(sys.executable).with_name("mkdocs")


def _table_rows(text: str) -> list[str]:
    """The rows of the key tables in a page (the lines that start with a key in backticks)."""
    return [line for line in text.splitlines() if line.startswith("| `")]


def test_docs_key_table_is_the_apps():
    from console.ui import keys

    doc = (ROOT / "docs" / "keys.md").read_text(encoding="utf-8")
    assert keys.markdown() in doc


def test_readme_keys_are_rows_of_the_apps_table():
    """The README shows the keys used most, each row as the app's table has it, and points to the
    page with every key."""
    from console.ui import keys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    app_rows = set(keys.markdown().splitlines())
    shown = [row for row in _table_rows(readme) if row.count("|") == 5]
    assert len(shown) >= 10
    assert [row for row in shown if row not in app_rows] == []
    assert "(docs/keys.md)" in readme


def test_a_key_the_app_changes_fails_the_readme_check():
    from console.ui import keys

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    app_rows = set(keys.markdown().splitlines())
    quit_row = next(row for row in _table_rows(readme) if row.endswith("`quit` |"))
    changed = readme.replace(quit_row, quit_row.replace("| `q` |", "| `Q` |"))
    assert [row for row in _table_rows(changed) if row.count("|") == 5 and row not in app_rows] != []


LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)")


def test_links_of_the_readme_and_the_notes_reach_files():
    """mkdocs checks the links of docs/; the pages outside it are checked here."""
    pages = [ROOT / name for name in ("README.md", "TESTING.md", "RELIABILITY.md", "BENCHMARKS.md")]
    pages.append(ROOT / "training" / "README.md")
    broken = sorted(
        (str(page.relative_to(ROOT)), target)
        for page in pages
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if "://" not in target and not target.startswith("mailto:") and not (page.parent / target).exists()
    )
    assert broken == []


def _build(root: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(site)],
        cwd=root, capture_output=True, text=True, timeout=120,
    )


def test_the_manual_builds_with_its_links_checked(tmp_path):
    done = _build(ROOT, tmp_path / "site")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "keys.html").exists()
    # the notes outside docs/ are pages of the site, and the links to them reach them
    assert (tmp_path / "site" / "project" / "RELIABILITY.html").exists()
    assert 'href="project/RELIABILITY.html"' in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_a_broken_link_or_anchor_fails_the_build(tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copytree(ROOT / ".ci", copy / ".ci")
    (copy / "training").mkdir()
    shutil.copy(ROOT / "training" / "README.md", copy / "training" / "README.md")
    for name in ("mkdocs.yml", "TESTING.md", "RELIABILITY.md", "BENCHMARKS.md"):
        shutil.copy(ROOT / name, copy / name)
    assert _build(copy, tmp_path / "ok").returncode == 0

    web = copy / "docs" / "web.md"
    text = web.read_text(encoding="utf-8")
    web.write_text(text.replace("(oncall.md#notifications)", "(oncall.md#no-such-anchor)"), encoding="utf-8")
    done = _build(copy, tmp_path / "anchor")
    assert done.returncode != 0 and "no-such-anchor" in done.stderr

    web.write_text(text.replace("(oncall.md#notifications)", "(on-call.md)"), encoding="utf-8")
    done = _build(copy, tmp_path / "page")
    assert done.returncode != 0 and "on-call.md" in done.stderr

    web.write_text(text.replace("(keys.md)", "(../TESTNG.md)"), encoding="utf-8")
    done = _build(copy, tmp_path / "note")
    assert done.returncode != 0 and "TESTNG.md" in done.stderr

    web.write_text(text, encoding="utf-8")
    (copy / "docs" / "extra.md").write_text("# A page the nav leaves out\n", encoding="utf-8")
    done = _build(copy, tmp_path / "omitted")
    assert done.returncode != 0 and "extra.md" in done.stderr


def test_the_screen_shown_is_one_picture():
    """docs/screen-80x24.txt is the 80x24 picture that the README and the screens page show."""
    picture = (ROOT / "docs" / "screen-80x24.txt").read_text(encoding="utf-8")
    assert len(picture.splitlines()) == 24
    assert max(len(line) for line in picture.splitlines()) <= 80
    for page in (ROOT / "README.md", ROOT / "docs" / "screens.md"):
        assert f"```\n{picture}```\n" in page.read_text(encoding="utf-8"), page.name


def test_the_readme_is_short_and_points_to_the_manual():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 200
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
    assert [page for page in pages if f"({page})" not in readme] == []


def test_a_key_is_shown_as_the_character_a_person_types():
    """The key table (help, docs/keys.md, the README) shows `&`, `/`, `?`, never Textual's names for them."""
    from textual.keys import key_to_character

    from console.ui import keys

    named = sorted({part.strip() for bindings, _where in keys.SECTIONS for b in bindings
                    for part in b.key.split(",")
                    if len(part.strip()) > 1 and "+" not in part
                    and (ch := key_to_character(part.strip())) and ch.isprintable() and not ch.isspace()
                    and keys.key_name(part.strip()) != ch})
    assert not named, f"keys shown by Textual's name instead of their character: {named}"
