"""No job holds the server's token: a job handed it gets a token of its own, which reaches its own
job and nothing else of the Jobs API (no list, no other job read or cancelled, no job started), no
repo its command does not name, and nothing once the job has ended."""

from __future__ import annotations

import json
import sys

import httpx
from huggingface_hub import HfApi
from jobs_helpers import NAMESPACE, wait_stage

from console.server import paths

PROBE = """
import json, os
from huggingface_hub import HfApi
from huggingface_hub.utils import HfHubHTTPError

ns, other = {ns!r}, {other!r}
api = HfApi()
token = os.environ["HF_TOKEN"]
with open(os.path.join(os.environ["CONSOLE_ARTIFACTS_DIR"], "token-" + os.environ["JOB_ID"]), "w") as fh:
    fh.write(token)

def status(call):
    try:
        call()
        return 200
    except HfHubHTTPError as exc:
        return exc.response.status_code

print(json.dumps({{
    "own": status(lambda: api.inspect_job(job_id=os.environ["JOB_ID"], namespace=ns)),
    "whoami": status(lambda: api.whoami()),
    "list": status(lambda: list(api.list_jobs(namespace=ns))),
    "read_other": status(lambda: api.inspect_job(job_id=other, namespace=ns)),
    "cancel_other": status(lambda: api.cancel_job(job_id=other, namespace=ns)),
    "start": status(lambda: api.run_job(image="ubuntu", command=["true"], namespace=ns)),
    "schedules": status(lambda: list(api.list_scheduled_jobs(namespace=ns))),
    "create_repo": status(lambda: api.create_repo(ns + "/not-mine")),
    "buckets": status(lambda: api.create_bucket(ns + "/not-mine")),
}}))
"""


def test_a_job_handed_the_servers_token_reaches_only_its_own_job(server, api: HfApi) -> None:
    other = api.run_job(image="ubuntu", command=["sleep", "300"], namespace=NAMESPACE)
    wait_stage(api, other.id, ("RUNNING",), timeout=30)
    job = api.run_job(image="python:3.12", command=[sys.executable, "-c", PROBE.format(ns=NAMESPACE, other=other.id)],
                      secrets={"HF_TOKEN": server.token}, env={"HF_HUB_OFFLINE": "0"}, namespace=NAMESPACE)
    done = wait_stage(api, job.id, timeout=60)
    logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert done.status.stage == "COMPLETED", (done.status, logs[-10:])
    seen = json.loads(logs[-1])
    assert seen == {"own": 200, "whoami": 200, "list": 403, "read_other": 403, "cancel_other": 403, "start": 403,
                    "schedules": 403, "create_repo": 403, "buckets": 403}, seen
    assert api.inspect_job(job_id=other.id, namespace=NAMESPACE).status.stage == "RUNNING"
    assert len(list(api.list_jobs(namespace=NAMESPACE))) == 2  # it started nothing

    token = (paths.tenant_artifacts_dir(None) / f"token-{job.id}").read_text()
    assert token.startswith("hf_job_") and token != server.token  # the server's token never entered it
    assert server.token not in "\n".join(logs)
    own = httpx.get(f"{server.url}/api/jobs/{NAMESPACE}/{job.id}", headers={"authorization": f"Bearer {token}"})
    assert own.status_code == 401  # revoked when the job ended
    api.cancel_job(job_id=other.id, namespace=NAMESPACE)


REPO_PROBE = """
import json, os, sys, urllib.error, urllib.request

def call(method, path, body=None):
    req = urllib.request.Request(os.environ["HF_ENDPOINT"] + path, method=method, data=body,
                                 headers={"authorization": "Bearer " + os.environ["HF_TOKEN"],
                                          "content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=20) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code

ns = sys.argv[1]
create = lambda name: json.dumps({"name": name, "organization": ns, "type": "model"}).encode()
print(json.dumps({
    "create_own": call("POST", "/api/repos/create", create("mine")),
    "create_other": call("POST", "/api/repos/create", create("theirs")),
    "read_base": call("GET", f"/api/models/{ns}/base"),
    "read_other": call("GET", f"/api/models/{ns}/private-other"),
    "delete_own": call("DELETE", "/api/repos/delete", create("mine")),
}))
"""


def test_a_console_runs_token_reaches_the_repos_its_command_names_and_no_other(server, api: HfApi) -> None:
    for repo in ("base", "private-other"):
        api.create_repo(f"{NAMESPACE}/{repo}", private=True)
    command = [sys.executable, "-c", REPO_PROBE, NAMESPACE, "--base-model", f"{NAMESPACE}/base",
               "--hub-model-id", f"{NAMESPACE}/mine"]
    job = api.run_job(image="python:3.12", command=command, secrets={"HF_TOKEN": server.token},
                      labels={"app": "console", "tenant": "acme", "kind": "sft"}, namespace=NAMESPACE)
    done = wait_stage(api, job.id, timeout=60)
    logs = list(api.fetch_job_logs(job_id=job.id, namespace=NAMESPACE))
    assert done.status.stage == "COMPLETED", (done.status, logs[-10:])
    assert json.loads(logs[-1]) == {"create_own": 200, "create_other": 403, "read_base": 200, "read_other": 403,
                                    "delete_own": 403}, logs[-1]
    assert api.repo_exists(f"{NAMESPACE}/mine") and not api.repo_exists(f"{NAMESPACE}/theirs")
