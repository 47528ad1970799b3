"""A job's volumes: buckets and repos of the local Hub stand-in, mounted at paths in the job.

What huggingface_hub 2.4 sends (`Volume.to_dict()`): ``{"type": "bucket"|"model"|"dataset"|"space",
"source": "ns/name", "mountPath": "/data", "readOnly": bool?, "path": "sub/folder"?,
"revision": str?}``. :func:`check_volumes` checks them against the Hub at submission (a 400 naming the volume);
:func:`resolve_mounts` finds their folders when the job starts:

- a bucket is ``artifacts/hub.local/buckets/<ns>/<name>/[path]`` (read-write unless ``readOnly``):
  what the job writes there stays in the bucket when its working folder is thrown away;
- a model / dataset / space is ``artifacts/hub.local/{models,datasets,spaces}/<ns>/<name>/[path]``,
  always read-only. For a model or dataset repo on the server it is the checkout of the repo's
  default branch (:meth:`console.server.hub.repos.RepoStore.checkout_dir`); anything else, put its
  files there by hand. Only the files on disk count: a `revision` is noted in the log and not
  honoured.

Mounting needs the sandbox (bubblewrap binds each folder at its mount path, which need not exist on
this machine). Without one a job with volumes ends ERROR and its log says why: running it with the
paths missing would fail later and less clearly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.server import paths
from console.server.hub.buckets import check_path, check_repo_id, within
from console.server.jobs.wire import ApiError

KINDS = {"bucket": "buckets", "model": "models", "dataset": "datasets", "space": "spaces"}


class VolumeError(Exception):
    """A volume cannot be mounted (the job ends ERROR with this message)."""


def check_volumes(volumes: list[dict[str, Any]]) -> None:
    """The Hub side of a spec's volumes (their shapes and mount paths are the job spec's,
    :class:`console.server.jobs.schema.Volume`): a source the Hub could hold, a folder inside it."""
    for i, vol in enumerate(volumes):
        try:
            check_repo_id(vol["source"], vol["type"])
            if vol.get("path"):
                check_path(vol["path"])
        except ApiError as exc:
            raise ApiError(400, f"volumes[{i}]: {exc.message}") from None


def resolve_mounts(
    volumes: list[dict[str, Any]], namespace: str, bucket_exists: Any
) -> tuple[list[tuple[Path, str, bool]], list[str]]:
    """(host folder, mount path, read-only) for each volume, and notes for the job's log.

    Raises :class:`VolumeError` naming the first volume that cannot be mounted."""
    mounts: list[tuple[Path, str, bool]] = []
    notes: list[str] = []
    for vol in volumes:
        kind, source, mount = vol["type"], vol["source"], vol["mountPath"]
        label = f"volume {mount} ({kind} {source})"
        if kind == "bucket" and (not source.startswith(namespace + "/") or not bucket_exists(source)):
            raise VolumeError(f"{label}: bucket {source} does not exist on this server "
                              f"(create it with `hf buckets create {source}`)")
        root = paths.hub_repo_dir(KINDS[kind], source)
        if kind != "bucket" and not root.is_dir():
            raise VolumeError(f"{label}: {kind} {source} is not in the local Hub stand-in (put its files in {root})")
        folder = root / vol["path"] if vol.get("path") else root
        if vol.get("path") and not within(root, folder):
            raise VolumeError(f"{label}: folder {vol['path']!r} leads out of the {kind} (a symlink)")
        if not folder.is_dir():
            raise VolumeError(f"{label}: folder {vol.get('path')!r} does not exist in {kind} {source}")
        if vol.get("revision") not in (None, "main"):
            notes.append(f"{label}: revision {vol['revision']!r} ignored, the local files are mounted")
        mounts.append((folder, mount, bool(vol["readOnly"])))
    return mounts, notes
