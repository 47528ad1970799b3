"""`hf jobs uv run` of local scripts, `-v` volumes and the buckets behind them, with the real `hf` CLI,
huggingface_hub and hf_xet against the embedded server (the Xet uploads and downloads included)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from huggingface_hub import HfApi, Volume
from jobs_helpers import NAMESPACE, wait_stage

from console.server import paths
from console.server.host import sandbox

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = f"{NAMESPACE}/jobs-artifacts"


def _job_id(out: str) -> str:
    return out.split("id: ", 1)[1].split()[0]


def test_bucket_round_trip_through_xet(api: HfApi, tmp_path: Path) -> None:
    """create (exist_ok), batch add / delete, tree, paths-info, info and download: hf_xet both ways."""
    api.create_bucket(ARTIFACTS, exist_ok=True, private=True)
    assert api.create_bucket(ARTIFACTS, exist_ok=True, private=True).bucket_id == ARTIFACTS
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3_000_000))
    api.batch_bucket_files(ARTIFACTS, add=[(big, "run/big.bin"), (b"hi\n", "run/hi.txt"), (b"", "run/.keep"),
                                           (b"gone", "old.txt")])
    api.batch_bucket_files(ARTIFACTS, delete=["old.txt"])
    files = {f.path: f for f in api.list_bucket_tree(ARTIFACTS, recursive=True)}
    assert sorted(files) == ["run/.keep", "run/big.bin", "run/hi.txt"]
    assert files["run/big.bin"].size == 3_000_000
    top = list(api.list_bucket_tree(ARTIFACTS, recursive=False))
    assert [(e.type, e.path) for e in top] == [("directory", "run")]
    info = api.bucket_info(ARTIFACTS)
    assert info.private and info.total_files == 3 and info.size == 3_000_003
    out = tmp_path / "out"
    api.download_bucket_files(ARTIFACTS, [("run/big.bin", out / "big.bin"), (files["run/hi.txt"], out / "hi.txt")])
    assert (out / "big.bin").read_bytes() == big.read_bytes()
    assert (out / "hi.txt").read_text() == "hi\n"
    assert api.get_bucket_file_metadata(ARTIFACTS, "run/hi.txt").size == 3
    folder = paths.hub_repo_dir("buckets", ARTIFACTS)
    assert (folder / "run" / "big.bin").read_bytes() == big.read_bytes()  # what a volume mounts


def test_uv_run_local_script_with_local_file_argument(hf, api: HfApi, tmp_path: Path) -> None:
    """The script and its file argument go to the jobs-artifacts bucket and are mounted at /data;
    what the job writes there stays in the bucket and downloads with the real client."""
    script = tmp_path / "count words.py"
    script.write_text(textwrap.dedent("""\
        # /// script
        # dependencies = ["requests"]
        # ///
        import sys
        text = open(sys.argv[1]).read()
        print("words:", len(text.split()), "from", sys.argv[1])
        open("/data/result.txt", "w").write(text.upper())
        """))
    data = tmp_path / "input.txt"
    data.write_text("one two three\n")
    out = hf("jobs", "uv", "run", "--with", "requests", "-p", "3.12", str(script), str(data), timeout=120)
    assert "words: 3 from /data/input.txt" in out.stdout
    job_id = _job_id(out.stdout)
    assert "words: 3" in hf("jobs", "logs", job_id).stdout
    info = api.inspect_job(job_id=job_id, namespace=NAMESPACE)
    [volume] = info.volumes
    assert (volume.type, volume.source, volume.mount_path, volume.read_only) == ("bucket", ARTIFACTS, "/data", False)
    assert info.command[:2] == ["uv", "run"] and info.command[-2:] == ["/data/count_words.py", "/data/input.txt"]
    result = f"{volume.path}/result.txt"
    assert result in {f.path for f in api.list_bucket_tree(ARTIFACTS, prefix=volume.path, recursive=True)}
    api.download_bucket_files(ARTIFACTS, [(result, tmp_path / "result.txt")])
    assert (tmp_path / "result.txt").read_text() == "ONE TWO THREE\n"


def test_uv_run_the_dataset_validator(hf, monkeypatch) -> None:
    """The repo's validator, shipped alone by huggingface_hub (the script and its file argument, as on
    HF), checks the dataset in the job: its report and verdict are in `hf jobs logs`."""
    monkeypatch.chdir(REPO)
    run = hf("jobs", "uv", "run", "training/validate_dataset.py", "training/data/acme.jsonl", timeout=120)
    logs = hf("jobs", "logs", _job_id(run.stdout)).stdout.splitlines()
    assert "valid rows: 300   rows with errors: 0" in logs
    assert logs[-1] == "VERDICT: PASS format=messages method=sft rows=300 max_tokens~71"
    failed = hf("jobs", "uv", "run", "training/validate_dataset.py", "training/data/acme.jsonl",
                "--method", "kto", check=False, timeout=120)
    logs = hf("jobs", "logs", _job_id(failed.stdout)).stdout.splitlines()
    assert logs[-1].startswith("VERDICT: FAIL ") and "kto" in logs[-1]


def test_local_folder_volume_and_the_whole_training_folder(hf, tmp_path: Path, monkeypatch) -> None:
    somedir = tmp_path / "somedir"
    somedir.mkdir()
    (somedir / "x.txt").write_text("the content of x\n")
    out = hf("jobs", "run", "-v", f"{somedir}:/data", "python:3.12", "cat", "/data/x.txt")
    assert "the content of x" in out.stdout
    monkeypatch.chdir(REPO)
    passed = hf("jobs", "run", "-v", "./training:/training", "python:3.12", "python",
                "/training/validate_dataset.py", "/training/data/acme.jsonl", timeout=120)
    assert "VERDICT: PASS format=messages" in passed.stdout


def test_bucket_volumes_read_write_and_read_only(hf, api: HfApi, tmp_path: Path) -> None:
    hf("buckets", "create", f"{NAMESPACE}/results")
    write = hf("jobs", "run", "-v", f"hf://buckets/{NAMESPACE}/results:/out", "python:3.12", "python", "-c",
               "import os; os.makedirs('/out/a', exist_ok=True); open('/out/a/r.txt', 'w').write('42')")
    assert "completed" in write.stdout
    listed = hf("buckets", "ls", f"{NAMESPACE}/results", "-R").stdout
    assert "a/r.txt" in listed
    pulled = tmp_path / "pulled"
    hf("buckets", "sync", f"hf://buckets/{NAMESPACE}/results", str(pulled))
    assert (pulled / "a" / "r.txt").read_text() == "42"
    ro = hf("jobs", "run", "-v", f"hf://buckets/{NAMESPACE}/results:/in:ro", "python:3.12", "sh", "-c",
            "cat /in/a/r.txt; echo; touch /in/new 2>/dev/null && echo WROTE || echo READ-ONLY")
    assert "42\nREAD-ONLY" in ro.stdout
    missing = hf("jobs", "run", "-v", f"hf://buckets/{NAMESPACE}/nope:/data", "python:3.12", "ls", check=False)
    assert missing.returncode != 0
    assert f"bucket {NAMESPACE}/nope does not exist" in missing.stdout + missing.stderr


def test_dataset_volume_from_the_local_hub(hf, tmp_path: Path) -> None:
    folder = paths.hub_repo_dir("datasets", f"{NAMESPACE}/ds")
    (folder / "train").mkdir(parents=True)
    (folder / "train" / "rows.jsonl").write_text('{"a": 1}\n')
    out = hf("jobs", "run", "-v", f"hf://datasets/{NAMESPACE}/ds:/data/ds", "python:3.12", "sh", "-c",
             "cat /data/ds/train/rows.jsonl; touch /data/ds/x 2>/dev/null || echo READ-ONLY")
    assert '{"a": 1}\nREAD-ONLY' in out.stdout
    absent = hf("jobs", "run", "-v", f"hf://models/{NAMESPACE}/nothing:/m", "python:3.12", "ls", check=False)
    assert "model tester/nothing is not in the local Hub stand-in" in absent.stdout + absent.stderr


def test_scheduled_uv_run_of_a_local_script(hf, api: HfApi, tmp_path: Path) -> None:
    script = tmp_path / "hello.py"
    script.write_text("import sys; print('scheduled hello', open(sys.argv[1]).read().strip())\n")
    arg = tmp_path / "who.txt"
    arg.write_text("world")
    created = hf("jobs", "scheduled", "uv", "run", "@daily", str(script), str(arg), timeout=120).stdout
    sj_id = _job_id(created)
    spec = json.loads(hf("jobs", "scheduled", "inspect", sj_id, "--json").stdout)[0]["job_spec"]
    assert spec["volumes"][0]["mount_path"] == "/data"
    job_id = _job_id(hf("jobs", "scheduled", "trigger", sj_id).stdout)
    assert wait_stage(api, job_id, timeout=60).status.stage == "COMPLETED"
    assert "scheduled hello world" in hf("jobs", "logs", job_id).stdout


def test_without_a_sandbox_volumes_end_the_job_with_the_reason(hf, api: HfApi, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(sandbox, "detect", lambda: sandbox.Sandbox(False, None, "turned off for the test"))
    somedir = tmp_path / "d"
    somedir.mkdir()
    (somedir / "x.txt").write_text("x")
    # the path is inside a shell line, not an argument of its own: nothing can lead it to the folder
    run = hf("jobs", "run", "-v", f"{somedir}:/data", "python:3.12", "sh", "-c", "cat /data/x.txt", check=False)
    assert run.returncode != 0
    job_id = _job_id(run.stdout)
    info = wait_stage(api, job_id)
    assert info.status.stage == "ERROR" and "volumes need the sandbox" in info.status.message
    assert "not mounted: /data" in hf("jobs", "logs", job_id).stdout


def test_without_a_sandbox_a_shipped_script_runs_from_its_bucket_folder(api: HfApi, monkeypatch) -> None:
    """A job's command names its shipped script under a read-only bucket volume (as every console job
    does): with nothing to bind the folder at its mount path, the command is led to the folder itself,
    and the log says so; the script still imports what was shipped beside it."""
    monkeypatch.setattr(sandbox, "detect", lambda: sandbox.Sandbox(False, None, "turned off for the test"))
    api.create_bucket(ARTIFACTS, exist_ok=True, private=True)
    api.batch_bucket_files(ARTIFACTS, add=[
        (b"import sys\nfrom helper import WORD\nprint(WORD, sys.argv[1])\n", "bundle-1/main.py"),
        (b"WORD = 'shipped'\n", "bundle-1/helper.py"),
    ])
    volume = Volume(type="bucket", source=ARTIFACTS, mount_path="/console-training", path="bundle-1", read_only=True)
    job = api.run_job(image="console/local-uv", command=["python", "/console-training/main.py", "ok"],
                      volumes=[volume], namespace=NAMESPACE)
    assert wait_stage(api, job.id).status.stage == "COMPLETED"
    logs = "\n".join(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert "shipped ok" in logs
    assert "volume /console-training: read-only; no sandbox: the command's paths under it lead to" in logs


@pytest.mark.parametrize("bad", [
    {"type": "bucket", "source": "tester/b", "mountPath": "relative"},
    {"type": "bucket", "source": "tester/b", "mountPath": "/proc/x"},
    {"type": "disk", "source": "tester/b", "mountPath": "/d"},
    {"type": "model", "source": "no-slash", "mountPath": "/d"},
])
def test_bad_volumes_are_refused_naming_the_volume(api: HfApi, bad: dict) -> None:
    from huggingface_hub._space_api import Volume

    with pytest.raises(Exception) as err:
        api.run_job(image="python:3.12", command=["ls"], namespace=NAMESPACE, volumes=[Volume(**bad)])
    assert "volumes[0]" in str(err.value) or "invalid model id" in str(err.value)
