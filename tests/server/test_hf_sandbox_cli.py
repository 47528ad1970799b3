"""`hf sandbox` (huggingface_hub 2.4) against the embedded server: not supported locally, and it
says why. A sandbox job boots HF's `sbx-server` binary, pinned by its SHA-256, from HF's public
bucket `huggingface/sbx-server` (mounted, or downloaded through it); this server holds one
namespace's buckets, not that one."""

from __future__ import annotations

import json

from jobs_helpers import NAMESPACE


def test_hf_sandbox_create_ends_with_the_reason(hf) -> None:
    out = hf("sandbox", "create", check=False, timeout=120)
    assert out.returncode == 1
    assert "does not expose the sandbox server port" in out.stderr
    [job] = json.loads(hf("jobs", "ps", "-a", "--format", "json").stdout)
    assert job["status"] == "ERROR" and job["labels"]["hf-sandbox"] == "1"
    logs = hf("jobs", "logs", f"{NAMESPACE}/{job['id']}", check=False).stdout
    assert "bucket huggingface/sbx-server does not exist on this server" in logs
