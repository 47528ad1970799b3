"""Connecting to a running local Jobs server loads nothing of the server: it reads where the server
announced itself and its token through `console.paths`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def test_connecting_to_a_running_server_imports_nothing_of_the_server(backend):
    code = textwrap.dedent("""
        import sys
        from console.backend import NEVER, connect
        from console.config import Config

        backend = connect(Config(namespace="oncall"), start=NEVER)
        list(backend.api.list_jobs(namespace=backend.namespace))
        print(sorted(m for m in sys.modules if m.startswith("console.server")))
    """)
    out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"
