"""Job ids as the console shows them: `console incident` takes the last 8 characters the jobs
table shows (or any unique start or end of the id), an ambiguous one lists the jobs it could be,
and what is not a job id at all (`../../etc/passwd`) is refused before any request; the embedded
server answers such an id with a 4xx naming the field."""

from __future__ import annotations

import http.client
import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os.path import commonprefix
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from tests.oncall.conftest import NAMESPACE, run_python, wait_stage

from console.backend import HUB, connect
from console.backend.job_ids import JobIdError, resolve_job_id
from console.cli import main
from console.config import Config, save


def _bundle(capsys) -> str:
    [printed] = capsys.readouterr().out.splitlines()
    return Path(printed).read_text(encoding="utf-8")


@pytest.fixture
def two_jobs(server, backend):
    save(Config(namespace=NAMESPACE, endpoint=server.url), os.environ["CONSOLE_CONFIG"])
    first = run_python(backend, "print('first job here')", tenant="acme")
    second = run_python(backend, "print('second job here')", tenant="globex")
    assert wait_stage(backend, first.id) == "COMPLETED" and wait_stage(backend, second.id) == "COMPLETED"
    return first.id, second.id


def test_incident_takes_the_8_characters_the_jobs_table_shows(two_jobs, capsys, tmp_path):
    first, second = two_jobs
    assert main(["incident", second[-8:], "--out", str(tmp_path)]) == 0
    text = _bundle(capsys)
    assert text.startswith(f"# Incident: job {second} (globex sft)") and "second job here" in text
    assert "first job here" not in text

    assert main(["incident", first[:14].upper(), "--out", str(tmp_path)]) == 0  # a prefix, any case
    text = _bundle(capsys)
    assert text.startswith(f"# Incident: job {first} (acme sft)") and "first job here" in text


def test_an_ambiguous_short_id_lists_the_jobs_it_could_be(two_jobs, capsys):
    first, second = two_jobs
    shared = commonprefix([first, second])  # ids start with their creation time
    assert shared
    assert main(["incident", shared]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "ambiguous" in err and first in err and second in err and "2 jobs match" in err
    assert main(["incident", "fffffffffff"]) == 2  # hex, but no job starts or ends with it
    err = capsys.readouterr().err
    assert "no job 'fffffffffff'" in err and NAMESPACE in err


def test_an_ambiguous_suffix_lists_both_jobs(server, backend):
    ids: list[str] = []
    pair = None
    while pair is None:  # 16 hex digits: two of at most 17 jobs end alike (15 digits: no id starts so)
        ids.append(run_python(backend, "print('x')", tenant="acme").id)
        pair = next(([a, ids[-1]] for a in ids[:-1] if a[-1] == ids[-1][-1]
                     and not any(i.startswith(a[-1]) for i in ids)), None)  # a prefix matches too
        assert len(ids) <= 33
    with pytest.raises(JobIdError) as err:
        resolve_job_id(backend.api, pair[0][-1], namespace=backend.namespace)
    message = str(err.value)
    assert "ambiguous" in message and all(job_id in message for job_id in pair)
    assert resolve_job_id(backend.api, pair[0][-8:], namespace=backend.namespace) == pair[0]
    assert resolve_job_id(backend.api, pair[1], namespace=backend.namespace) == pair[1]


def test_the_hub_backend_resolves_against_the_configured_namespace(server, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", server.token)
    with connect(Config(backend=HUB, namespace=NAMESPACE, endpoint=server.url)) as hub:
        job = run_python(hub, "print('on the hub')", tenant="acme")
        assert resolve_job_id(hub.api, job.id[-8:], namespace=hub.namespace) == job.id


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on 127.0.0.1 standing in for the Jobs API: it records each request's path
    as sent and answers 404 (JSON) to all of them."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            seen.append(self.path)
            body = json.dumps({"error": "not here"}).encode()
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_DELETE = _answer  # noqa: N815 (http.server's names)

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("bad", ["../../etc/passwd", "..", "a/b", "abc?x=1", "abc def", "abc%2F"])
def test_what_is_not_a_job_id_is_refused_before_any_request(recorder, monkeypatch, capsys, bad):
    url, seen = recorder
    monkeypatch.setenv("CONSOLE_SERVER_TOKEN", "hf_local_test")
    save(Config(namespace=NAMESPACE, endpoint=url), os.environ["CONSOLE_CONFIG"])
    assert main(["incident", bad]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a job id" in err and "letters and digits" in err
    assert seen == []


def test_a_full_id_is_asked_for_directly_without_a_listing(recorder, monkeypatch, capsys):
    url, seen = recorder
    monkeypatch.setenv("CONSOLE_SERVER_TOKEN", "hf_local_test")
    save(Config(namespace=NAMESPACE, endpoint=url), os.environ["CONSOLE_CONFIG"])
    full = "0123456789abcdef01234567"
    assert main(["incident", full]) == 2
    assert seen and seen[0] == f"/api/jobs/{NAMESPACE}/{full}"
    assert f"/api/jobs/{NAMESPACE}" not in seen and all(p.startswith("/api/jobs/") for p in seen)


def _raw(server, method: str, path: str) -> tuple[int, str]:
    """A request sent with its path exactly as written (no client folds `..` or decodes `%2F`)."""
    where = urlsplit(server.url)
    conn = http.client.HTTPConnection(where.hostname, where.port, timeout=30)
    try:
        conn.request(method, path, headers={"authorization": f"Bearer {server.token}"})
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("method, path, field", [
    ("GET", "/api/jobs/{ns}/..", "job_id"),
    ("GET", "/api/jobs/{ns}/../logs", "job_id"),
    ("POST", "/api/jobs/{ns}/%2E%2E/cancel", "job_id"),
    ("GET", "/api/jobs/{ns}/..%2F..%2Fetc", "job_id"),
    ("GET", "/api/jobs/{ns}/a%2Fb/logs", "job_id"),
    ("GET", "/api/jobs/{ns}/a%20b", "job_id"),
    ("GET", "/api/scheduled-jobs/{ns}/..", "sj_id"),
    ("POST", "/api/scheduled-jobs/{ns}/a%2F../suspend", "sj_id"),
])
def test_the_server_answers_an_id_with_dots_or_slashes_with_a_4xx_naming_the_field(server, method, path, field):
    status, body = _raw(server, method, path.format(ns=NAMESPACE))
    assert status == 400, body
    message = json.loads(body)["error"]
    assert message.startswith(f"{field} ") and "letters and digits only" in message


def test_the_followed_log_refuses_what_is_not_a_job_id_before_any_request(recorder, monkeypatch):
    url, seen = recorder
    monkeypatch.setenv("CONSOLE_SERVER_TOKEN", "hf_local_test")
    with connect(Config(namespace=NAMESPACE, endpoint=url)) as backend:
        with pytest.raises(JobIdError, match="is not a job id"):
            next(iter(backend.api.fetch_job_log_batches(job_id="../../etc/passwd", namespace=NAMESPACE)))
    assert seen == []
