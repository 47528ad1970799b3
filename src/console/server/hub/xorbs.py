"""Where the bytes of a xorb live: its own file, as hf_xet sent it, or the blob a repo commit built
from it, so that a committed file's bytes are stored once.

A xorb is a run of chunks, each an 8-byte header (version 0, stored length in 3 bytes little-endian,
compression scheme, unpacked length in 3 bytes) and its stored bytes, then whatever footer hf_xet
adds. When a commit builds a blob straight from xorbs whose every chunk is stored uncompressed (as
hf_xet keeps bytes that do not compress) and lies in that blob, each such xorb becomes a map,
``xet/xorbmaps/<hash>.json``: its chunk headers, where each chunk's bytes sit in the blob, and its
footer; the xorb file goes. A xorb reads the same either way: the ranges a client fetches, the
offsets of a reconstruction, a later blob built from it. A xorb with a compressed chunk, or chunks
of other files, stays as it is.

Blobs are never deleted (a repo deleted leaves its blobs), so a map's blob stays. A map is written
(and flushed to disk) only after its blob is flushed, and the xorb file is removed after that: a
crash at any point leaves the bytes on disk in one form or the other.
"""

from __future__ import annotations

import json
import mmap
import os
import secrets
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BLOCK = 4 << 20
"""The most bytes a range read assembles at a time."""
HASH_BATCH = 8 << 20
"""Bytes a blob build hashes in its second thread while it writes them."""
LAYOUTS_KEPT = 128


class XorbMissing(LookupError):
    pass


@dataclass(frozen=True)
class Layout:
    """A xorb's chunks: `offsets[i]` is where chunk i starts in the xorb, `offsets[-1]` where the
    chunks end (the footer follows, up to `size`); `at[i]` is where chunk i's stored bytes are in
    `source` (the xorb file itself, or the blob of a map)."""

    offsets: list[int]
    headers: list[bytes]
    at: list[int]
    size: int
    source: Path
    mapped: bool
    tail: bytes = b""

    def plain(self, i: int) -> int | None:
        """Chunk i's length when it is stored uncompressed, else None."""
        h = self.headers[i]
        n = int.from_bytes(h[1:4], "little")
        return n if h[0] == 0 and h[4] == 0 and int.from_bytes(h[5:8], "little") == n else None


def parse_layout(data: Any, source: Path) -> Layout:
    """The chunks of a xorb's bytes (a buffer or mmap), read from the headers alone."""
    offsets, headers, at, pos, size = [], [], [], 0, len(data)
    while pos + 8 <= size and data[pos] == 0:
        n = int.from_bytes(data[pos + 1:pos + 4], "little")
        if pos + 8 + n > size:
            break
        offsets.append(pos)
        headers.append(bytes(data[pos:pos + 8]))
        at.append(pos + 8)
        pos += 8 + n
    offsets.append(pos)
    return Layout(offsets, headers, at, size, source, False)


class Xorbs:
    """The xorbs under ``<cas>/xorbs`` and their maps under ``<cas>/xorbmaps``; a map names its
    blob by its path under the hub folder (the CAS folder's parent)."""

    def __init__(self, cas_root: Path) -> None:
        self.dir = cas_root / "xorbs"
        self.maps = cas_root / "xorbmaps"
        self.hub_root = cas_root.parent
        for d in (self.dir, self.maps):
            d.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._layouts: OrderedDict[str, Layout] = OrderedDict()

    def path(self, xorb: str) -> Path:
        return self.dir / xorb

    def map_path(self, xorb: str) -> Path:
        return self.maps / f"{xorb}.json"

    def has(self, xorb: str) -> bool:
        return self.path(xorb).exists() or self.map_path(xorb).exists()

    def put(self, xorb: str, data: bytes) -> bool:
        if self.has(xorb):
            return False
        write_atomic(self.path(xorb), data)
        return True

    def spool_path(self) -> Path:
        """A fresh name to receive a xorb under (then :meth:`adopt`)."""
        return self.dir / f".{secrets.token_hex(8)}.tmp"

    def adopt(self, xorb: str, received: Path) -> bool:
        """Keep the file `received` as the xorb `xorb` unless it is here already (False)."""
        if self.has(xorb):
            return False
        os.replace(received, self.path(xorb))
        return True

    # -- layouts -------------------------------------------------------------------------

    def layout(self, xorb: str, fresh: bool = False) -> Layout:
        """The xorb's layout (kept for the most recently used xorbs); `XorbMissing` if neither its
        file nor its map is here."""
        with self._lock:
            known = None if fresh else self._layouts.get(xorb)
            if known is not None:
                self._layouts.move_to_end(xorb)
                return known
        found = self._read_layout(xorb)
        self._remember(xorb, found)
        return found

    def _remember(self, xorb: str, layout: Layout) -> None:
        with self._lock:
            self._layouts[xorb] = layout
            while len(self._layouts) > LAYOUTS_KEPT:
                self._layouts.popitem(last=False)

    def _read_layout(self, xorb: str) -> Layout:
        path = self.path(xorb)
        try:
            with open(path, "rb") as fh:
                if os.fstat(fh.fileno()).st_size == 0:
                    return parse_layout(b"", path)
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                    return parse_layout(mm, path)
        except FileNotFoundError:
            pass
        try:
            raw = json.loads(self.map_path(xorb).read_bytes())
        except FileNotFoundError:
            raise XorbMissing(xorb) from None
        packed = bytes.fromhex(raw["headers"])
        headers = [packed[i:i + 8] for i in range(0, len(packed), 8)]
        offsets, pos = [], 0
        for h in headers:
            offsets.append(pos)
            pos += 8 + int.from_bytes(h[1:4], "little")
        offsets.append(pos)
        tail = bytes.fromhex(raw["tail"])
        if pos + len(tail) != int(raw["size"]) or len(raw["at"]) != len(headers):
            raise OSError(f"the map of xorb {xorb} does not add up")
        return Layout(offsets, headers, list(raw["at"]), int(raw["size"]), self.hub_root / raw["blob"], True, tail)

    # -- reads ---------------------------------------------------------------------------

    def read(self, xorb: str, first: int, end: int) -> Iterator[bytes | memoryview]:
        """The bytes first..end of the xorb, in blocks of at most `BLOCK` (blocking reads)."""
        layout = self.layout(xorb)
        try:
            fd = os.open(layout.source, os.O_RDONLY)
        except FileNotFoundError:  # its file just became a map
            layout = self.layout(xorb, fresh=True)
            fd = os.open(layout.source, os.O_RDONLY)
        try:
            while first < end:
                stop = min(end, first + BLOCK)
                block = _mapped_block(layout, fd, first, stop) if layout.mapped else os.pread(fd, stop - first, first)
                if not block:
                    return
                first += len(block)
                yield block
        finally:
            os.close(fd)

    def copy_plain(self, terms: list[tuple[str, int, int, int]], out: Any, digest: Any) -> bool:
        """Write a file's bytes (its `terms`) to `out` and into `digest` when every chunk of it is
        stored uncompressed: True. False, with nothing written, when a chunk is compressed or the
        xorbs do not add up."""
        pieces: list[tuple[Path, int, int]] = []
        try:
            for xorb, start, end, size in terms:
                layout = self.layout(xorb)
                if end >= len(layout.offsets):
                    return False
                got = 0
                for i in range(start, end):
                    n = layout.plain(i)
                    if n is None:
                        return False
                    pieces.append((layout.source, layout.at[i], n))
                    got += n
                if got != size:
                    return False
        except XorbMissing:
            return False
        maps: dict[Path, mmap.mmap] = {}
        try:
            for source in {p[0] for p in pieces}:
                with open(source, "rb") as fh:
                    maps[source] = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            if any(at + n > len(maps[source]) for source, at, n in pieces):
                return False
            views = {source: memoryview(mm) for source, mm in maps.items()}
            slices = [views[source][at:at + n] for source, at, n in pieces]
            try:
                _hash_and_write(slices, out, digest)
            finally:
                for view in [*slices, *views.values()]:
                    view.release()
            return True
        except (OSError, ValueError):  # a xorb became a map meanwhile, or is empty: hf_xet answers
            return False
        finally:
            for mm in maps.values():
                mm.close()

    # -- a blob takes a xorb's place ----------------------------------------------------

    def lodge(self, terms: list[tuple[str, int, int, int]], blob: Path) -> list[str]:
        """Turn into maps onto `blob` (the file of `terms`, on disk and flushed) the xorbs of
        `terms` whose every chunk is uncompressed and in the file; the xorbs turned."""
        where: dict[str, dict[int, int]] = {}
        unfit: set[str] = set()
        pos = 0
        for xorb, start, end, size in terms:
            try:
                layout = self.layout(xorb)
            except XorbMissing:
                return []
            chunks, at = where.setdefault(xorb, {}), pos
            pos += size
            if layout.mapped or end >= len(layout.offsets):
                unfit.add(xorb)
                continue
            for i in range(start, end):
                n = layout.plain(i)
                if n is None:
                    unfit.add(xorb)
                    break
                chunks.setdefault(i, at)
                at += n
        turned = []
        for xorb, chunks in where.items():
            layout = self.layout(xorb)
            if xorb in unfit or len(chunks) != len(layout.headers):
                continue
            with open(layout.source, "rb") as fh:
                fh.seek(layout.offsets[-1])
                tail = fh.read()
            body = json.dumps({
                "blob": blob.relative_to(self.hub_root).as_posix(), "size": layout.size,
                "headers": b"".join(layout.headers).hex(), "at": [chunks[i] for i in range(len(chunks))],
                "tail": tail.hex(),
            }).encode()
            write_atomic(self.map_path(xorb), body, durable=True)
            layout.source.unlink(missing_ok=True)
            self._remember(xorb, self._read_layout(xorb))
            turned.append(xorb)
        return turned


def _hash_and_write(pieces: list[memoryview], out: Any, digest: Any) -> None:
    """`digest.update` and `out.write` each piece, in order: the hashing of each run of pieces in a
    second thread while the run is written (both let go of the GIL), so a big file costs about the
    slower of the two, not their sum."""
    batches: list[list[memoryview]] = [[]]
    size = 0
    for piece in pieces:
        if size >= HASH_BATCH:
            batches.append([])
            size = 0
        batches[-1].append(piece)
        size += len(piece)

    def hash_all(batch: list[memoryview]) -> None:
        for piece in batch:
            digest.update(piece)

    with ThreadPoolExecutor(1, thread_name_prefix="blob-hash") as pool:
        pending = None
        for batch in batches:
            if pending is not None:
                pending.result()
            pending = pool.submit(hash_all, batch)
            for piece in batch:
                out.write(piece)
        if pending is not None:
            pending.result()


def _mapped_block(layout: Layout, fd: int, pos: int, stop: int) -> memoryview:
    """Bytes pos..stop of a mapped xorb: its headers and footer from the map, each chunk's bytes read
    from the blob straight into place (one read per run of chunks that lie one after another in the
    blob, as a file's chunks do)."""
    view = memoryview(bytearray(stop - pos))
    first, n = pos, len(layout.headers)
    reads: list[tuple[int, memoryview]] = []
    i = bisect_right(layout.offsets, pos) - 1
    while pos < stop:
        if i >= n:  # the footer
            at = pos - layout.offsets[n]
            view[pos - first:] = layout.tail[at:at + stop - pos]
            break
        start = layout.offsets[i]
        if pos < start + 8:
            take = min(stop, start + 8) - pos
            view[pos - first:pos - first + take] = layout.headers[i][pos - start:pos - start + take]
            pos += take
            continue
        upto = min(stop, layout.offsets[i + 1])
        reads.append((layout.at[i] + pos - start - 8, view[pos - first:upto - first]))
        pos = upto
        i += 1
    run: list[memoryview] = []
    run_at = run_end = 0
    for at, slot in [*reads, (-1, view[:0])]:
        if run and at == run_end and len(run) < 512:
            run.append(slot)
            run_end += len(slot)
            continue
        if run and os.preadv(fd, run, run_at) != run_end - run_at:
            raise OSError(f"a blob is shorter than the xorb map that names it ({run_end} bytes)")
        run, run_at, run_end = [slot], at, at + len(slot)
    return view


def write_atomic(path: Path, data: bytes, durable: bool = False) -> None:
    """Write a file whole under a temporary name, then rename it; `durable`: flushed to disk, file and
    folder, before this returns."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
        if durable:
            fsync_dir(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
