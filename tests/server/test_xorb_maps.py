"""A xorb whose bytes a blob holds (a map onto the blob) reads byte for byte as the xorb did: any
range of it, its chunk offsets, and a file built from it again."""

from __future__ import annotations

import hashlib
import io
import os
import random
from pathlib import Path

from console.server.hub.xorbs import BLOCK, Xorbs


def _xorb(chunks: list[bytes], footer: bytes) -> bytes:
    head = lambda n: bytes([0]) + n.to_bytes(3, "little") + bytes([0]) + n.to_bytes(3, "little")  # noqa: E731
    return b"".join(head(len(c)) + c for c in chunks) + footer


def test_a_mapped_xorb_reads_as_the_xorb_did(tmp_path: Path) -> None:
    rng = random.Random(7)
    chunks = [os.urandom(rng.randrange(1, 128 * 1024)) for _ in range(90)]  # over two BLOCKs
    raw = _xorb(chunks, b"XETBLOB footer bytes")
    xorbs = Xorbs(tmp_path / "xet")
    name = "a" * 64
    xorbs.put(name, raw)
    # the file: a prefix of its own, then every chunk of the xorb (two terms)
    blob = tmp_path / "repos" / "blobs" / "f"
    blob.parent.mkdir(parents=True)
    data = b"own bytes" + b"".join(chunks)
    blob.write_bytes(data)
    terms = [("b" * 64, 0, 1, 9), (name, 0, 40, sum(map(len, chunks[:40]))), (name, 40, 90, sum(map(len, chunks[40:])))]
    xorbs.put("b" * 64, _xorb([b"own bytes"], b""))
    assert sorted(xorbs.lodge(terms, blob)) == [name, "b" * 64]
    assert not xorbs.path(name).exists() and xorbs.layout(name, fresh=True).mapped
    spans = [(0, len(raw)), (0, 3), (5, 13), (len(raw) - 30, len(raw)), (BLOCK - 5, BLOCK + 70_000)]
    spans += [sorted(rng.sample(range(len(raw) + 1), 2)) for _ in range(40)]
    for first, end in spans:
        assert b"".join(xorbs.read(name, first, end)) == raw[first:end], (first, end)
    assert xorbs.layout(name).size == len(raw)
    out, digest = io.BytesIO(), hashlib.sha256()
    assert xorbs.copy_plain(terms[1:], out, digest)
    assert out.getvalue() == b"".join(chunks) and digest.digest() == hashlib.sha256(out.getvalue()).digest()


def test_a_xorb_with_a_compressed_chunk_or_chunks_of_another_file_stays(tmp_path: Path) -> None:
    xorbs = Xorbs(tmp_path / "xet")
    blob = tmp_path / "repos" / "blobs" / "f"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"abcdef")
    xorbs.put("c" * 64, _xorb([b"abc", b"def", b"other file"], b""))
    assert xorbs.lodge([("c" * 64, 0, 2, 6)], blob) == []  # chunk 2 is not in the blob
    assert xorbs.path("c" * 64).exists()
