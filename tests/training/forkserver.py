"""A process that imports the training stack once, then runs each training script in a forked child.

The recipe tests run every script for real, as `python script.py ...` would: its own process, its
own environment, working folder, arguments, stdout and stderr, `__name__ == "__main__"`, its exit
status. What a fork saves is the ~7 s of CPU each fresh interpreter spends importing torch,
transformers, TRL, PEFT and sentence-transformers, most of a tiny run's time. Trackio is not
imported here: it reads `TRACKIO_DIR` when it is imported, and each run has its own.

The libraries read some of their settings from the environment once, at import (the Hub endpoint,
offline mode, HF_HOME): a fork server serves runs whose environment agrees with its own on those.
`training_helpers.run_forked` uses one started offline; a test whose runs push to an embedded
server's Hub starts its own (`training_helpers.ForkServer`) with that run environment.

Protocol: one JSON request per line on stdin ({"script", "args", "env", "cwd", "stdout", "stderr",
"timeout"}), two JSON answers per line on stdout: {"pid"} once the child is forked (a test may kill
it, as a job's timeout does), then {"returncode"} when it ends (-9 for a run killed at its timeout
or by the test).
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import sys
import time
import traceback

import accelerate  # noqa: F401
import datasets  # noqa: F401
import peft  # noqa: F401
import sentence_transformers  # noqa: F401
import tokenizers  # noqa: F401
import torch  # noqa: F401
import transformers  # noqa: F401
import trl  # noqa: F401


def child(req: dict) -> int:
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.argv = [req["script"], *req["args"]]
    try:
        runpy.run_path(req["script"], run_name="__main__")
        return 0
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 1


def main() -> None:
    reply = sys.stdout
    for line in sys.stdin:
        req = json.loads(line)
        reply.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child(req)
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        reply.write(json.dumps({"pid": pid}) + "\n")
        reply.flush()
        deadline = time.monotonic() + float(req.get("timeout", 240))
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                code = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                code = -9
                break
            time.sleep(0.02)
        reply.write(json.dumps({"returncode": code}) + "\n")
        reply.flush()


if __name__ == "__main__":
    main()
