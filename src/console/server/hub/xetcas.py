"""A Xet content-addressed store (CAS) on this machine: the routes hf_xet's remote client calls.

Bucket uploads and downloads in huggingface_hub 2.4 go through Xet (`hf_xet`): the client asks the
Hub for a CAS token (`/api/buckets/{id}/xet-write-token` or `xet-read-token`, answered by
:mod:`console.server.hub.bucket_routes`) whose `casUrl` names the CAS to talk to. This module is that
CAS, on the same loopback server: the client chunks, compresses and hashes, the server only keeps
what it is sent and hands it back.

- ``POST {cas}/v1/xorbs/default/{hash}``: a xorb (compressed chunks + footer), kept as is
- ``POST {cas}/v1/shards``: a shard; its file section (file hash -> xorb chunk ranges) is indexed,
  once every xorb it names is here
- ``GET  {cas}/v1/reconstructions/{file_hash}``: the terms of a file and where to fetch them
  (``Range: bytes=a-b`` for a slice)
- ``GET  {cas}/fetch/{xorb}?sig=...``: byte ranges of a xorb (the "presigned" URLs above)
- ``GET  {cas}/v1/chunks/...``: global dedup is not offered (404, as the client expects)
- the v2 shard / reconstruction routes and upload grants answer 404, and the client falls back to
  v1 (which it does on 404 by design)

Layout (under the local Hub stand-in): ``xet/xorbs/<hash>`` (or ``xet/xorbmaps/<hash>.json``, a xorb
whose bytes a repo commit's blob holds: see :mod:`console.server.hub.xorbs`), ``xet/shards/<hash>``,
``xet/files/<file_hash>.json`` (the terms of each file), ``xet/sha256/<sha256>`` (the file hash
of a file by its SHA-256, which a repo commit names it by). Nothing is ever deleted: a bucket file
that is removed only loses its path.

Why not hf_xet's own `local://` simulation CAS: its folder is a redb database that one process at a
time may open, and the client keeps it open until its upload commit is dropped, which is after the
bucket batch call; two uploads at once (two `hf jobs uv run`) would fail. See docs/jobs-server.md.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import re
import secrets
import struct
import threading
import time
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from console.server.hub.uploads import body_chunks, max_file_bytes
from console.server.hub.xorbs import Layout, XorbMissing, Xorbs, write_atomic
from console.server.jobs.wire import ApiError
from console.server.reserve import is_disk_full

HASH_RE = re.compile(r"[0-9a-f]{64}\Z")
EMPTY_FILE_HASH = "0" * 64
"""What hf_xet answers for an empty file: it uploads nothing for it."""
TOKEN_SECONDS = 3600
MAX_XORB_BYTES = 128 * 1024 * 1024
MAX_SHARD_BYTES = 64 * 1024 * 1024
"""The largest shard read (a shard lists files and chunk ranges: a few KB per file)."""
_SHARD_HEADER = 48
_ENTRY = 48
_BOOKEND = b"\xff" * 32
_FLAG_VERIFICATION = 1 << 31
_FLAG_METADATA_EXT = 1 << 30


class CasError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def hash_hex(raw: bytes) -> str:
    """A Xet hash as its text form: four little-endian u64s, each as 16 hex digits."""
    return "".join(format(int.from_bytes(raw[i:i + 8], "little"), "016x") for i in range(0, 32, 8))


def parse_shard_files(
    data: bytes, sha256s: dict[str, str] | None = None
) -> dict[str, list[tuple[str, int, int, int]]]:
    """The file section of a shard: file hash -> [(xorb hash, first chunk, end chunk, bytes)].

    `sha256s`, when given, receives file hash -> SHA-256 (hex) of each file whose entry carries
    it (hf_xet's metadata extension: what a repo commit names an uploaded file by)."""
    if len(data) < _SHARD_HEADER:
        raise CasError(400, "shard too short")
    files: dict[str, list[tuple[str, int, int, int]]] = {}
    pos = _SHARD_HEADER
    while True:
        if pos + _ENTRY > len(data):
            raise CasError(400, "shard file section is truncated")
        head = data[pos:pos + _ENTRY]
        if head[:32] == _BOOKEND:
            return files
        flags, count = struct.unpack_from("<II", head, 32)
        pos += _ENTRY
        terms = []
        for _ in range(count):
            entry = data[pos:pos + _ENTRY]
            if len(entry) < _ENTRY:
                raise CasError(400, "shard file entry is truncated")
            _flags, size, start, end = struct.unpack_from("<IIII", entry, 32)
            if end <= start:
                raise CasError(400, "shard names an empty chunk range")
            terms.append((hash_hex(entry[:32]), start, end, size))
            pos += _ENTRY
        pos += _ENTRY * (count if flags & _FLAG_VERIFICATION else 0)
        if flags & _FLAG_METADATA_EXT:
            if sha256s is not None:
                sha256s[hash_hex(head[:32])] = hash_hex(data[pos:pos + 32])
            pos += _ENTRY
        files[hash_hex(head[:32])] = terms


def chunk_offsets(data: Any, upto: int) -> list[int]:
    """Byte offsets of chunks 0..upto of a xorb (offset[upto] is where chunk upto-1 ends)."""
    offsets = [0]
    pos = 0
    while len(offsets) <= upto:
        if pos + 8 > len(data):
            raise CasError(416, f"xorb has fewer than {upto} chunks")
        compressed = int.from_bytes(data[pos + 1:pos + 4], "little")
        pos += 8 + compressed
        if pos > len(data):
            raise CasError(416, "xorb chunk runs past its end")
        offsets.append(pos)
    return offsets


class CasStore:
    """The xorbs, shards and file index on disk, plus the short-lived tokens the client presents."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.xorbs = Xorbs(root)
        for sub in ("shards", "files", "sha256"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        instance = root / "instance"
        if not instance.exists():
            write_atomic(instance, secrets.token_hex(6).encode())
        # In the CAS URL: hf_xet caches what it uploaded per URL, so a new store must never share
        # a URL with an old one (a server reusing a port over a wiped data folder).
        self.instance = instance.read_text().strip()
        self._secret = secrets.token_bytes(32)
        self._tokens: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._by_sha256: dict[str, str] = {}

    # -- tokens --------------------------------------------------------------------------

    def issue_token(self, scope: str) -> tuple[str, int]:
        """A CAS access token for `scope` ("read" or "write") and its expiry (Unix seconds)."""
        now = time.time()
        token = "xet_" + secrets.token_urlsafe(24)
        exp = int(now + TOKEN_SECONDS)
        with self._lock:
            for key, (_, old_exp) in list(self._tokens.items()):
                if old_exp < now:
                    del self._tokens[key]
            self._tokens[token] = (scope, exp)
        return token, exp

    def check_token(self, header: str, need: str) -> None:
        token = header.removeprefix("Bearer ").strip()
        with self._lock:
            found = self._tokens.get(token)
        if found is None or found[1] < time.time():
            raise CasError(401, "missing or expired Xet token: ask the Hub for a new one")
        if need == "write" and found[0] != "write":
            raise CasError(403, "this Xet token is read-only")

    def sign(self, xorb: str) -> str:
        return hmac.new(self._secret, xorb.encode(), hashlib.sha256).hexdigest()[:32]

    # -- storage -------------------------------------------------------------------------

    def put_shard(self, data: bytes) -> list[str]:
        sha256s: dict[str, str] = {}
        files = parse_shard_files(data, sha256s)
        limit = max_file_bytes()
        for file_hash, terms in files.items():
            if sum(t[3] for t in terms) > limit:
                raise CasError(413, f"file {file_hash} is {sum(t[3] for t in terms)} bytes, over the largest file "
                               f"this server takes ({limit} bytes; CONSOLE_HUB_MAX_FILE_BYTES)")
        missing = sorted({t[0] for terms in files.values() for t in terms if not self.xorbs.has(t[0])})
        if missing:
            raise CasError(400, f"shard names xorbs this CAS does not have: {', '.join(missing[:3])}")
        write_atomic(self.root / "shards" / hashlib.sha256(data).hexdigest(), data)
        for file_hash, terms in files.items():
            target = self.root / "files" / f"{file_hash}.json"
            if not target.exists():
                write_atomic(target, json.dumps(terms).encode())
        for file_hash, sha256 in sha256s.items():
            if HASH_RE.match(sha256) and file_hash in files:
                write_atomic(self.root / "sha256" / sha256, file_hash.encode())
        return list(files)

    def file_for_sha256(self, sha256: str) -> str | None:
        """The Xet hash of an uploaded file whose SHA-256 is `sha256`, if a shard named it."""
        if not HASH_RE.match(sha256):
            return None
        known = self._by_sha256.get(sha256)
        if known is not None:
            return known
        try:
            found = (self.root / "sha256" / sha256).read_text().strip()
        except OSError:
            return None
        if len(self._by_sha256) >= 100_000:
            self._by_sha256.clear()
        self._by_sha256[sha256] = found  # a file's hash never changes once indexed
        return found

    def file_terms(self, file_hash: str) -> list[tuple[str, int, int, int]] | None:
        if file_hash == EMPTY_FILE_HASH:
            return []
        try:
            raw = (self.root / "files" / f"{file_hash}.json").read_bytes()
        except (FileNotFoundError, OSError):
            return None
        return [tuple(t) for t in json.loads(raw)]  # type: ignore[misc]

    def has_file(self, file_hash: str) -> bool:
        return HASH_RE.match(file_hash) is not None and self.file_terms(file_hash) is not None

    def file_size(self, file_hash: str) -> int | None:
        terms = self.file_terms(file_hash)
        return None if terms is None else sum(t[3] for t in terms)

    def write_plain(self, file_hash: str, out: Any, digest: Any) -> bool:
        """Write a file's bytes to `out`, and into `digest`, straight from its xorbs, when every chunk
        of it is stored uncompressed (as hf_xet keeps bytes that do not compress): True. False,
        with nothing written, when a chunk is compressed or the xorbs do not add up (hf_xet then
        reconstructs it)."""
        terms = self.file_terms(file_hash)
        if terms is None:
            raise CasError(404, f"file {file_hash} not found in this CAS")
        return self.xorbs.copy_plain(terms, out, digest)

    def lodge(self, file_hash: str, blob: Path) -> list[str]:
        """Let `blob` (the file's bytes, flushed to disk) hold the bytes of the file's xorbs that hold
        nothing else, uncompressed: those xorbs become maps onto it (their hashes)."""
        terms = self.file_terms(file_hash)
        return [] if not terms else self.xorbs.lodge(terms, blob)

    def layout(self, xorb: str) -> Layout:
        try:
            return self.xorbs.layout(xorb)
        except XorbMissing:
            raise CasError(404, f"xorb {xorb} not found") from None

    def offsets(self, xorb: str, upto: int) -> list[int]:
        found = self.layout(xorb).offsets
        if upto >= len(found):
            raise CasError(416, f"xorb has fewer than {upto} chunks")
        return found

    def reconstruction(self, file_hash: str, byte_range: tuple[int, int] | None, fetch_url: str) -> dict[str, Any]:
        """The v1 reconstruction answer; `byte_range` is inclusive, as in an HTTP Range header."""
        terms = self.file_terms(file_hash)
        if terms is None:
            raise CasError(404, f"file {file_hash} not found in this CAS")
        size = sum(t[3] for t in terms)
        first, last = (0, size - 1) if byte_range is None else byte_range
        if size == 0 or first >= size:
            raise CasError(416, f"range starts past the end of the file ({size} bytes)")
        last = min(last, size - 1)
        picked, offset_into_first, pos = [], 0, 0
        for term in terms:
            end = pos + term[3]
            if end > first and pos <= last:
                if not picked:
                    offset_into_first = first - pos
                picked.append(term)
            pos = end
        # one fetch per run of chunks of a xorb: the terms' chunk ranges merged where they overlap or
        # touch, so that each term lies inside exactly one (hf_xet takes a term's bytes from the
        # first fetch that starts where it does: two overlapping ones would cut a term short)
        spans: dict[str, list[list[int]]] = {}
        for xorb, start, end, _size in sorted(picked, key=lambda t: (t[0], t[1], t[2])):
            runs = spans.setdefault(xorb, [])
            if runs and start <= runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], end)
            else:
                runs.append([start, end])
        fetch: dict[str, list[dict[str, Any]]] = {}
        for xorb, runs in spans.items():
            offsets = self.offsets(xorb, max(end for _, end in runs))
            fetch[xorb] = [{
                "range": {"start": start, "end": end},
                "url": f"{fetch_url}/{xorb}?sig={self.sign(xorb)}",
                "url_range": {"start": offsets[start], "end": offsets[end] - 1},
            } for start, end in runs]
        return {
            "offset_into_first_range": offset_into_first,
            "terms": [{"hash": x, "unpacked_length": n, "range": {"start": s, "end": e}} for x, s, e, n in picked],
            "fetch_info": fetch,
        }


async def _xorb_range(store: CasStore, xorb: str, first: int, end: int) -> Any:
    """The bytes first..end of a xorb, read in blocks in a worker thread."""
    blocks = store.xorbs.read(xorb, first, end)
    try:
        while True:
            block = await run_in_threadpool(next, blocks, None)
            if block is None:
                return
            yield block
    finally:
        blocks.close()


SPOOL_BATCH = 4 << 20
"""Bytes of a xorb's body received before a worker thread writes them (while the next arrive)."""


async def _spool(request: Request, tmp: Path) -> int:
    """A xorb's body into `tmp` (a 413 past `MAX_XORB_BYTES`), written in batches of the pieces as
    received, each by a worker thread while the next batch arrives: never joined into one buffer."""
    loop = asyncio.get_running_loop()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    pending: asyncio.Future[None] | None = None
    size, batch, batched = 0, [], 0
    try:
        async for piece in body_chunks(request):
            size += len(piece)
            if size > MAX_XORB_BYTES:
                raise CasError(413, "xorb too large")
            batch.append(piece)
            batched += len(piece)
            if batched >= SPOOL_BATCH:
                if pending is not None:
                    await pending
                pending = loop.run_in_executor(None, _write_all, fd, batch)
                batch, batched = [], 0
        if pending is not None:
            await pending
        await loop.run_in_executor(None, _write_all, fd, batch)
        return size
    finally:
        if pending is not None and not pending.done():
            await asyncio.wait([pending])  # the file stays open until its last write ends
        os.close(fd)


def _write_all(fd: int, pieces: list[Any]) -> None:
    while pieces:
        n = os.writev(fd, pieces[:512])
        while pieces and n >= len(pieces[0]):
            n -= len(pieces[0])
            pieces = pieces[1:]
        if n:
            pieces = [memoryview(pieces[0])[n:], *pieces[1:]]


def _check_first_chunk(path: Path) -> None:
    """A 4xx unless the file starts with one well-formed chunk."""
    with open(path, "rb") as fh:
        head = fh.read(8)
        chunk_offsets(head + fh.read(int.from_bytes(head[1:4], "little") if len(head) == 8 else 0), 1)


def _range(header: str | None) -> tuple[int, int] | None:
    match = re.fullmatch(r"bytes=(\d+)-(\d*)", (header or "").strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2)) if match.group(2) else 2**63


def cas_routes(get_store: Any, prefix: str = "/xet/{instance}") -> list[Route]:
    """The CAS routes; `get_store()` gives the :class:`CasStore` (created on first use)."""

    def store_for(request: Request, need: str | None) -> CasStore:
        store: CasStore = get_store()
        if request.path_params.get("instance") != store.instance:
            raise CasError(404, "this CAS was replaced (the server's data folder changed): ask for a new token")
        if need is not None:
            store.check_token(request.headers.get("authorization", ""), need)
        return store

    def handled(fn: Any) -> Any:
        async def handler(request: Request) -> Response:
            try:
                return await fn(request)
            except CasError as exc:
                return JSONResponse({"error": exc.message}, status_code=exc.status)
            except ApiError as exc:  # a stalled upload (408)
                return JSONResponse({"error": exc.message}, status_code=exc.status)
            except OSError as exc:
                if is_disk_full(exc):
                    return JSONResponse({"error": "disk full: the Xet store cannot keep the upload; free space "
                                         "in the server's data folder"}, status_code=507)
                raise

        return handler

    async def read_capped(request: Request, limit: int, what: str) -> bytes:
        """The body, at most `limit` bytes (declared or streamed): a 413 past it."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise CasError(413, f"{what} too large")
        chunks, size = [], 0
        async for chunk in body_chunks(request):
            size += len(chunk)
            if size > limit:
                raise CasError(413, f"{what} too large")
            chunks.append(chunk)
        return b"".join(chunks)

    def checked_hash(request: Request, name: str = "hash") -> str:
        value = request.path_params[name].lower()
        if not HASH_RE.match(value):
            raise CasError(400, f"{value!r} is not a Xet hash")
        return value

    async def chunks(request: Request) -> Response:
        store_for(request, "read")
        raise CasError(404, "global deduplication is not offered by this CAS")

    async def xorb(request: Request) -> Response:
        store = store_for(request, "write")
        xorb_hash = checked_hash(request)
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_XORB_BYTES:
            raise CasError(413, "xorb too large")
        tmp = store.xorbs.spool_path()
        try:
            await _spool(request, tmp)
            await run_in_threadpool(_check_first_chunk, tmp)
            return JSONResponse({"was_inserted": await run_in_threadpool(store.xorbs.adopt, xorb_hash, tmp)})
        finally:
            tmp.unlink(missing_ok=True)

    async def shard(request: Request) -> Response:
        store = store_for(request, "write")
        store.put_shard(await read_capped(request, MAX_SHARD_BYTES, "shard"))
        return JSONResponse({"result": 1})

    async def reconstruction(request: Request) -> Response:
        store = store_for(request, "read")
        file_hash = checked_hash(request)
        header = request.headers.get("range")
        wanted = _range(header)
        if header and wanted is None:
            raise CasError(400, f"bad Range header {header!r}")
        base = str(request.url_for("xet_fetch_base", instance=store.instance))
        return JSONResponse(store.reconstruction(file_hash, wanted, base.rstrip("/")))

    async def fetch(request: Request) -> Response:
        store = store_for(request, None)
        xorb_hash = checked_hash(request, "xorb")
        if not hmac.compare_digest(request.query_params.get("sig", ""), store.sign(xorb_hash)):
            raise CasError(403, "bad or missing signature")
        total = store.layout(xorb_hash).size
        wanted = _range(request.headers.get("range"))
        first, last = (0, total - 1) if wanted is None else (wanted[0], min(wanted[1], total - 1))
        if first > last and wanted is not None:
            raise CasError(416, "range not satisfiable")
        # streamed in reads of up to 4 MiB off the event loop: the client takes the first bytes while the
        # server reads the next, and other fetches go on meanwhile
        headers = {"Content-Length": str(last - first + 1)}
        if wanted is not None:
            headers["Content-Range"] = f"bytes {first}-{last}/{total}"
        return StreamingResponse(_xorb_range(store, xorb_hash, first, last + 1),
                                 status_code=200 if wanted is None else 206,
                                 media_type="application/octet-stream", headers=headers)

    async def not_offered(request: Request) -> Response:
        store_for(request, "read")
        raise CasError(404, f"{request.method} {request.url.path} is not offered by this CAS (v1 only)")

    async def fetch_base(request: Request) -> Response:
        raise CasError(404, "name a xorb")

    return [
        Route(f"{prefix}/v1/chunks/{{key:path}}", handled(chunks), methods=["GET"]),
        Route(f"{prefix}/v1/xorbs/{{xprefix}}/{{hash}}", handled(xorb), methods=["POST"]),
        Route(f"{prefix}/v1/shards", handled(shard), methods=["POST"]),
        Route(f"{prefix}/v1/reconstructions/{{hash}}", handled(reconstruction), methods=["GET"]),
        Route(f"{prefix}/fetch", handled(fetch_base), methods=["GET"], name="xet_fetch_base"),
        Route(f"{prefix}/fetch/{{xorb}}", handled(fetch), methods=["GET"]),
        Route(f"{prefix}/{{rest:path}}", handled(not_offered), methods=["GET", "POST", "PUT"]),
    ]
