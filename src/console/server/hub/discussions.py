"""Pull requests and discussions of the local Hub's repos, in huggingface.co's shapes.

A pull request is a ref, ``refs/pr/N``, beside the repo's branches and tags, with a discussion of
the same number: a commit with ``create_pr=1`` opens one (its ref starts at the base branch's head,
or at the commit's ``parentCommit``), a commit to ``refs/pr/N`` adds to it, and a merge applies its
changes to the base branch (a path both sides changed is a conflict, a 409). Every read that takes a
revision takes ``refs/pr/N``. The routes, under ``/api/{type}s/{repo}/discussions``:

- ``GET  ``  ``type``, ``status``, ``author``, ``p``  the discussions, newest first, 50 a page
- ``POST ``  ``{"title", "description", "pullRequest"}``  a new discussion (or an empty pull request)
- ``GET  /{num}``  the discussion with its events, ``changes`` (``base``, ``mergeCommitId``) and ``diff``
- ``POST /{num}/comment`` ``{"comment"}``, ``/status`` ``{"status", "comment"}``, ``/title`` ``{"title"}``,
  ``/merge`` ``{"comment"}``, ``/comment/{id}/edit`` ``{"content"}``, ``/comment/{id}/hide``
"""

from __future__ import annotations

import base64
import html
import json
import secrets
import time
from typing import Any

from console.server.hub.repofiles import Commit
from console.server.jobs.wire import ApiError, iso

RepoStore = Any
"""`console.server.hub.repos.RepoStore` (which imports this module for its tables and ref names)."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS discussions (
    type TEXT, repo TEXT, num INTEGER, title TEXT, is_pr INTEGER, status TEXT, created_at REAL,
    base TEXT, start_oid TEXT, merge_oid TEXT, PRIMARY KEY (type, repo, num));
CREATE TABLE IF NOT EXISTS discussion_events (
    type TEXT, repo TEXT, num INTEGER, id TEXT, kind TEXT, created_at REAL, data TEXT);
"""
"""The tables, in the repo store's database (a repo's delete and rename carry them)."""

PAGE = 50
PR_PREFIX = "refs/pr/"


def pr_number(revision: str) -> int | None:
    """N of a revision ``refs/pr/N``, else None."""
    rest = revision[len(PR_PREFIX):] if revision.startswith(PR_PREFIX) else ""
    return int(rest) if rest.isdigit() and len(rest) < 10 and int(rest) > 0 else None


def ref_key(revision: str) -> tuple[str, str]:
    """(kind, name) of the ref a commit goes to: ``refs/pr/N`` a pull request's, else a branch's."""
    return ("pr", revision[len("refs/pr/"):]) if revision.startswith("refs/pr/") else \
        ("branch", revision.removeprefix("refs/heads/"))


def refs_listing(s: RepoStore, repo_type: str, repo_id: str, prs: bool = False) -> dict[str, list[dict[str, str]]]:
    """The branches and tags (and with `prs` the pull requests' refs, as ``include_prs=1`` asks)."""
    s.require(repo_type, repo_id)
    out: dict[str, list[dict[str, str]]] = {"branches": [], "converts": [], "tags": [], "pullRequests": []}
    for kind, name, oid in s._q("SELECT kind, name, oid FROM refs WHERE type = ? AND repo = ? "
                                "ORDER BY kind, CAST(name AS INTEGER), name", (repo_type, repo_id)):
        prefix, key = {"branch": ("refs/heads/", "branches"), "tag": ("refs/tags/", "tags")}.get(
            kind, ("refs/pr/", "pullRequests"))
        if key != "pullRequests" or prs:
            out[key].append({"name": name if kind != "pr" else prefix + name, "ref": prefix + name,
                             "targetCommit": oid})
    return out


class Discussions:
    """The discussions of one repo store (its database and its lock)."""

    def __init__(self, store: RepoStore) -> None:
        self.s = store

    # -- reads ---------------------------------------------------------------------------

    def _row(self, repo_type: str, repo_id: str, num: int) -> tuple[Any, ...]:
        rows = self.s._q("SELECT num, title, is_pr, status, created_at, base, start_oid, merge_oid FROM discussions "
                         "WHERE type = ? AND repo = ? AND num = ?", (repo_type, repo_id, num))
        if not rows:
            raise ApiError(404, f"Discussion {num} not found in {repo_id}")
        return rows[0]

    def _summary(self, repo_type: str, repo_id: str, row: tuple[Any, ...]) -> dict[str, Any]:
        num, title, is_pr, status, created, *_ = row
        count = self.s._q("SELECT COUNT(*) FROM discussion_events WHERE type = ? AND repo = ? AND num = ? "
                          "AND kind = 'comment'", (repo_type, repo_id, num))[0][0]
        return {"num": num, "title": title, "status": status, "isPullRequest": bool(is_pr),
                "createdAt": iso(created), "author": self._author(), "pinned": False, "numComments": count,
                "repo": {"name": repo_id, "type": repo_type}, "topReactions": [], "numReactionUsers": 0}

    def _author(self) -> dict[str, Any]:
        return {"name": self.s.namespace, "type": "user", "fullname": self.s.namespace,
                "isPro": False, "isHf": False, "isOwner": True}

    def listing(self, repo_type: str, repo_id: str, kind: str | None, status: str | None,
                author: str | None, page: int) -> dict[str, Any]:
        self.s.require(repo_type, repo_id)
        rows = self.s._q("SELECT num, title, is_pr, status, created_at, base, start_oid, merge_oid FROM discussions "
                         "WHERE type = ? AND repo = ? ORDER BY num DESC", (repo_type, repo_id))
        if kind in ("pull_request", "discussion"):
            rows = [r for r in rows if bool(r[2]) == (kind == "pull_request")]
        closed = sum(1 for r in rows if r[3] != "open")
        if status in ("open", "closed"):
            rows = [r for r in rows if (r[3] == "open") == (status == "open")]
        if author not in (None, "", self.s.namespace):
            rows = []
        chunk = rows[page * PAGE:(page + 1) * PAGE]
        return {"discussions": [self._summary(repo_type, repo_id, r) for r in chunk], "count": len(rows),
                "start": page * PAGE, "numClosedDiscussions": closed}

    def events(self, repo_type: str, repo_id: str, num: int) -> list[dict[str, Any]]:
        rows = self.s._q("SELECT id, kind, created_at, data FROM discussion_events WHERE type = ? AND repo = ? "
                         "AND num = ? ORDER BY rowid", (repo_type, repo_id, num))
        return [{"id": i, "type": k, "createdAt": iso(t), "author": self._author(), "data": json.loads(d)}
                for i, k, t, d in rows]

    def details(self, repo_type: str, repo_id: str, num: int) -> dict[str, Any]:
        self.s.require(repo_type, repo_id)
        row = self._row(repo_type, repo_id, num)
        out = {**self._summary(repo_type, repo_id, row), "events": self.events(repo_type, repo_id, num)}
        if row[2]:
            changes: dict[str, Any] = {"base": f"refs/heads/{row[5]}"}
            if row[7]:
                changes["mergeCommitId"] = row[7]
            out.update({"changes": changes, "filesWithConflicts": self._conflicts(repo_type, repo_id, row),
                        "diff": self._diff(repo_type, repo_id, row)})
        return out

    def _changed(self, repo_type: str, repo_id: str, row: tuple[Any, ...]) -> tuple[Commit, Commit, list[str]]:
        """The commit the PR starts from, its head, and the paths it changes."""
        start = self.s.commit(repo_type, repo_id, row[6])
        head = self.s.resolve(repo_type, repo_id, f"{PR_PREFIX}{row[0]}")
        paths = sorted(p for p in set(start.tree) | set(head.tree) if start.tree.get(p) != head.tree.get(p))
        return start, head, paths

    def _conflicts(self, repo_type: str, repo_id: str, row: tuple[Any, ...]) -> list[str]:
        if row[3] != "open":
            return []
        start, _, paths = self._changed(repo_type, repo_id, row)
        base = self.s.resolve(repo_type, repo_id, f"refs/heads/{row[5]}")
        return [p for p in paths if base.tree.get(p) != start.tree.get(p)]

    def _diff(self, repo_type: str, repo_id: str, row: tuple[Any, ...]) -> str:
        start, head, paths = self._changed(repo_type, repo_id, row)
        out = []
        for p in paths:
            old, new = start.tree.get(p), head.tree.get(p)
            out.append(f"diff --git a/{p} b/{p}\n"
                       + ("new file\n" if old is None else "deleted file\n" if new is None else "")
                       + f"index {old.oid[:7] if old else '0000000'}..{new.oid[:7] if new else '0000000'}\n")
        return "".join(out)

    # -- writes --------------------------------------------------------------------------

    def _event(self, repo_type: str, repo_id: str, num: int, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        eid, now = secrets.token_hex(12), time.time()
        self.s._db.execute("INSERT INTO discussion_events VALUES (?, ?, ?, ?, ?, ?, ?)",
                           (repo_type, repo_id, num, eid, kind, now, json.dumps(data)))
        return {"id": eid, "type": kind, "createdAt": iso(now), "author": self._author(), "data": data}

    @staticmethod
    def _comment_data(text: str) -> dict[str, Any]:
        return {"edited": False, "hidden": False, "numEdits": 0, "editors": [], "reactions": [],
                "latest": {"raw": text, "html": f"<p>{html.escape(text)}</p>", "updatedAt": iso(time.time())}}

    def open(self, repo_type: str, repo_id: str, title: Any, description: Any, pull_request: bool,
             base: str = "main", start: str | None = None) -> int:
        """A new discussion (with `pull_request`, its ref ``refs/pr/N`` at `start`, else at `base`'s head)."""
        if not isinstance(title, str) or not title.strip():
            raise ApiError(400, "title: expected a non-empty string")
        if len(title) > 500:
            raise ApiError(400, "title: at most 500 characters")
        if description is not None and not isinstance(description, str):
            raise ApiError(400, "description: expected a string")
        s = self.s
        with s._lock:
            s.require(repo_type, repo_id)
            oid = None
            if pull_request:
                oid = s.resolve(repo_type, repo_id, f"refs/heads/{base}").oid
                oid = s.resolve(repo_type, repo_id, start).oid if start else oid
            s._db.execute("BEGIN IMMEDIATE")
            try:
                num = s._db.execute("SELECT COALESCE(MAX(num), 0) + 1 FROM discussions WHERE type = ? AND repo = ?",
                                    (repo_type, repo_id)).fetchone()[0]
                s._db.execute("INSERT INTO discussions VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?, NULL)",
                              (repo_type, repo_id, num, title.strip(), int(pull_request), time.time(),
                               base if pull_request else None, oid))
                if pull_request:
                    s._db.execute("INSERT INTO refs VALUES (?, ?, 'pr', ?, ?)", (repo_type, repo_id, str(num), oid))
                if description and description.strip():
                    self._event(repo_type, repo_id, num, "comment", self._comment_data(description.strip()))
                s._db.execute("COMMIT")
            except BaseException:
                s._rollback()
                raise
        return num

    def drop(self, repo_type: str, repo_id: str, num: int) -> None:
        """Remove a pull request whose opening commit failed."""
        with self.s._lock:
            for table in ("discussions", "discussion_events"):
                self.s._db.execute(f"DELETE FROM {table} WHERE type = ? AND repo = ? AND num = ?",
                                   (repo_type, repo_id, num))
            self.s._db.execute("DELETE FROM refs WHERE type = ? AND repo = ? AND kind = 'pr' AND name = ?",
                               (repo_type, repo_id, str(num)))

    def committed(self, repo_type: str, repo_id: str, num: int, title: str, oid: str) -> None:
        """Record a commit to ``refs/pr/num`` in its discussion."""
        with self.s._lock:
            self._event(repo_type, repo_id, num, "commit", {"subject": title, "oid": oid})

    def _write(self, repo_type: str, repo_id: str, num: int, kind: str, data: dict[str, Any],
               update: tuple[str, Any] | None = None) -> dict[str, Any]:
        with self.s._lock:
            self.s.require(repo_type, repo_id)
            self._row(repo_type, repo_id, num)
            if update is not None:
                self.s._db.execute(f"UPDATE discussions SET {update[0]} = ? WHERE type = ? AND repo = ? AND num = ?",
                                   (update[1], repo_type, repo_id, num))
            return self._event(repo_type, repo_id, num, kind, data)

    def comment(self, repo_type: str, repo_id: str, num: int, text: Any) -> dict[str, Any]:
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "comment: expected a non-empty string")
        return self._write(repo_type, repo_id, num, "comment", self._comment_data(text.strip()))

    def retitle(self, repo_type: str, repo_id: str, num: int, title: Any) -> dict[str, Any]:
        if not isinstance(title, str) or not title.strip():
            raise ApiError(400, "title: expected a non-empty string")
        old = self._row(repo_type, repo_id, num)[1]
        return self._write(repo_type, repo_id, num, "title-change", {"from": old, "to": title.strip()},
                           ("title", title.strip()))

    def set_status(self, repo_type: str, repo_id: str, num: int, status: Any, comment: Any) -> dict[str, Any]:
        if status not in ("open", "closed"):
            raise ApiError(400, "status: expected open or closed")
        if self._row(repo_type, repo_id, num)[3] == "merged":
            raise ApiError(400, f"status: pull request {num} is merged")
        if isinstance(comment, str) and comment.strip():
            self.comment(repo_type, repo_id, num, comment)
        return self._write(repo_type, repo_id, num, "status-change", {"status": status}, ("status", status))

    def edit_comment(self, repo_type: str, repo_id: str, num: int, eid: str, text: Any, hide: bool) -> dict[str, Any]:
        if not hide and (not isinstance(text, str) or not text.strip()):
            raise ApiError(400, "content: expected a non-empty string")
        with self.s._lock:
            found = [e for e in self.events(repo_type, repo_id, num) if e["id"] == eid and e["type"] == "comment"]
            if not found:
                raise ApiError(404, f"comment {eid[:40]!r} not found in discussion {num}")
            data = found[0]["data"]
            if hide:
                data["hidden"] = True
            else:
                data.update(edited=True, numEdits=data.get("numEdits", 0) + 1,
                            latest={"raw": text.strip(), "html": f"<p>{html.escape(text.strip())}</p>",
                                    "updatedAt": iso(time.time())})
            self.s._db.execute("UPDATE discussion_events SET data = ? WHERE type = ? AND repo = ? AND num = ? "
                               "AND id = ?", (json.dumps(data), repo_type, repo_id, num, eid))
            return {**found[0], "data": data}

    def merge(self, repo_type: str, repo_id: str, num: int, comment: Any, reconstruct: Any) -> str:
        """Apply the pull request's changes to its base branch (one commit): its oid."""
        s = self.s
        with s._lock:
            s.require(repo_type, repo_id)
            row = self._row(repo_type, repo_id, num)
            if not row[2]:
                raise ApiError(400, f"Discussion {num} is not a pull request")
            if row[3] != "open":
                raise ApiError(400, f"pull request {num} is {row[3]}: only an open one merges")
            conflicts = self._conflicts(repo_type, repo_id, row)
            if conflicts:
                raise ApiError(409, f"pull request {num} conflicts with {row[5]} in: {', '.join(conflicts)[:500]}")
            _, head, paths = self._changed(repo_type, repo_id, row)
            base = s.resolve(repo_type, repo_id, f"refs/heads/{row[5]}")
            lines: list[Any] = [{"key": "header", "value": {
                "summary": f"Merge refs/pr/{num}: {row[1]}"[:300], "description": "", "parentCommit": base.oid}}]
            for p in paths:
                entry = head.tree.get(p)
                if entry is None:
                    lines.append({"key": "deletedFile", "value": {"path": p}})
                elif entry.lfs:
                    lines.append({"key": "lfsFile", "value": {"path": p, "algo": "sha256", "oid": entry.sha256,
                                                              "size": entry.size}})
                else:
                    data = s.blob_path(entry.sha256).read_bytes()
                    lines.append({"key": "file", "value": {"path": p, "encoding": "base64",
                                                           "content": base64.b64encode(data).decode()}})
            oid = s.apply_commit(repo_type, repo_id, row[5], lines, reconstruct) if paths else base.oid
            if isinstance(comment, str) and comment.strip():
                self.comment(repo_type, repo_id, num, comment)
            self._write(repo_type, repo_id, num, "status-change", {"status": "merged"}, ("status", "merged"))
            s._db.execute("UPDATE discussions SET merge_oid = ? WHERE type = ? AND repo = ? AND num = ?",
                          (oid, repo_type, repo_id, num))
        return oid


async def route(request: Any, s: RepoStore, repo_type: str, repo_id: str, rest: list[str],
                call: Any, reconstruct: Any) -> Any:
    """``/api/{type}s/{repo}/discussions[/...]`` (see the module)."""
    from starlette.responses import JSONResponse

    from console.server.jobs.wire import read_json_body

    d = Discussions(s)
    method = request.method
    if not rest:
        if method == "GET":
            q = request.query_params
            page = q.get("p", "0")
            if not page.isdigit() or len(page) > 6:
                raise ApiError(400, "p: expected a page number from 0")
            return JSONResponse(await call(d.listing, repo_type, repo_id, q.get("type"), q.get("status"),
                                           q.get("author"), int(page)))
        if method == "POST":
            body = await read_json_body(request)
            if not isinstance(body, dict):
                raise ApiError(400, 'the body must be {"title", "description", "pullRequest"}')
            num = await call(d.open, repo_type, repo_id, body.get("title"), body.get("description"),
                             body.get("pullRequest") is True)
            return JSONResponse({"num": num, "url": f"/{repo_id}/discussions/{num}"})
    if not rest[0].isdigit() or len(rest[0]) > 9 or int(rest[0]) < 1:
        raise ApiError(400, f"num: expected a discussion number, got {rest[0][:40]!r}")
    num = int(rest[0])
    if len(rest) == 1 and method == "GET":
        return JSONResponse(await call(d.details, repo_type, repo_id, num))
    if method != "POST":
        raise ApiError(405, f"{method} is not served on a discussion")
    body = (await read_json_body(request)) if await request.body() else {}
    if not isinstance(body, dict):
        raise ApiError(400, "the body must be a JSON object")
    what = rest[1:]
    if what == ["comment"]:
        return JSONResponse({"newMessage": await call(d.comment, repo_type, repo_id, num, body.get("comment"))})
    if what == ["status"]:
        event = await call(d.set_status, repo_type, repo_id, num, body.get("status"), body.get("comment"))
        return JSONResponse({"newStatus": event})
    if what == ["title"]:
        return JSONResponse({"newTitle": await call(d.retitle, repo_type, repo_id, num, body.get("title"))})
    if what == ["merge"]:
        await call(d.merge, repo_type, repo_id, num, body.get("comment"), reconstruct)
        return JSONResponse({})
    if len(what) == 3 and what[0] == "comment" and what[2] in ("edit", "hide"):
        event = await call(d.edit_comment, repo_type, repo_id, num, what[1], body.get("content"), what[2] == "hide")
        return JSONResponse({"updatedComment": event})
    raise ApiError(404, f"POST discussions/{num}/{'/'.join(what)[:100]} is not a discussion call the local Hub serves")
