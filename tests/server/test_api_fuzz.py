"""The Jobs API fuzzed from its own OpenAPI description (schemathesis, bounded).

Every operation of ``GET /openapi.json`` gets valid and invalid requests (schemathesis's positive
and negative generation: wrong types, values out of range, missing fields, odd strings); about half
of them aim at a real finished job and a real scheduled job instead of random ids, so the checks
behind the ids are reached too. Nothing may answer 5xx, every 4xx is a JSON ``{"error": ...}``,
no request may take longer than its timeout, and the server must still answer afterwards.

Jobs the fuzzer submits are queued and never run (the runner's slots are set to zero after the
finished job has run): random commands are not executed on this machine. The case count is in the
run's summary (tests/server/conftest.py); the bound is EXAMPLES per operation and mode, about 15 s.
"""

from __future__ import annotations

import os
import time

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jobs_helpers import NAMESPACE, make_server, wait_until

schemathesis = pytest.importorskip("schemathesis")
from schemathesis import GenerationMode  # noqa: E402

EXAMPLES = int(os.environ.get("CONSOLE_FUZZ_EXAMPLES", "10"))
"""Cases per operation and mode. The default run is the same every time (derandomized: CI fails
only on a change, never on a draw); set CONSOLE_FUZZ_EXAMPLES for a longer, random run."""
RANDOM = "CONSOLE_FUZZ_EXAMPLES" in os.environ
CALL_TIMEOUT = 10.0


def test_the_jobs_api_survives_fuzzing_from_its_openapi_description(record_property):
    srv = make_server()
    srv.start()
    try:
        auth = {"Authorization": f"Bearer {srv.token}"}
        client = httpx.Client(base_url=srv.url, headers=auth, timeout=30)
        done = client.post(f"/api/jobs/{NAMESPACE}",
                           json={"dockerImage": "python:3.12", "command": ["true"]}).json()["id"]
        wait_until(lambda: client.get(f"/api/jobs/{NAMESPACE}/{done}").json()["status"]["stage"]
                   == "COMPLETED", timeout=30)
        srv.service.runner.max_running = 0  # what the fuzzer submits is queued, never run
        sj = client.post(f"/api/scheduled-jobs/{NAMESPACE}", json={
            "schedule": "@yearly", "suspend": True,
            "jobSpec": {"dockerImage": "python:3.12", "command": ["true"]}}).json()["id"]

        doc = client.get("/openapi.json").json()
        schema = schemathesis.openapi.from_dict(doc)
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 20

        counts = {"cases": 0, "4xx": 0, "2xx": 0}
        failures: list[str] = []
        slowest = 0.0
        started = time.monotonic()
        for operation in operations:
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

                @settings(max_examples=EXAMPLES, deadline=None, database=None,
                          derandomize=not RANDOM, phases=[Phase.generate],
                          suppress_health_check=list(HealthCheck))
                @given(case=operation.as_strategy(generation_mode=mode), real=st.booleans())
                def fuzz(case, real):
                    nonlocal slowest
                    if real and isinstance(case.path_parameters, dict):
                        if "job_id" in case.path_parameters:
                            case.path_parameters["job_id"] = done
                        if "sj_id" in case.path_parameters:
                            case.path_parameters["sj_id"] = sj
                    t0 = time.monotonic()
                    resp = case.call(base_url=srv.url, headers=auth, timeout=CALL_TIMEOUT)
                    slowest = max(slowest, time.monotonic() - t0)
                    counts["cases"] += 1
                    what = f"{case.method} {case.formatted_path} -> {resp.status_code}"
                    if resp.status_code >= 500:
                        failures.append(f"{what}: {resp.text[:300]}")
                    elif resp.status_code >= 400:
                        counts["4xx"] += 1
                        try:
                            error = resp.json()["error"]
                        except (ValueError, KeyError, TypeError):
                            error = None
                        if not isinstance(error, str) or not error:
                            failures.append(f"{what}: not a JSON error: {resp.text[:300]}")
                    else:
                        counts["2xx"] += 1

                fuzz()
        elapsed = time.monotonic() - started
        summary = (f"schemathesis: {counts['cases']} cases over {len(operations)} operations "
                   f"({counts['2xx']} 2xx, {counts['4xx']} 4xx, {len(failures)} failures) in "
                   f"{elapsed:.1f} s, slowest answer {slowest:.2f} s")
        print("\n" + summary)
        record_property("fuzz_summary", summary)
        assert not failures, "\n".join(failures[:20])
        assert counts["cases"] >= len(operations) * 2
        assert slowest < CALL_TIMEOUT
        # still answering, and what was there is intact
        assert client.get("/api/whoami-v2").status_code == 200
        assert client.get(f"/api/jobs/{NAMESPACE}/{done}").status_code == 200
        client.close()
    finally:
        srv.stop()
