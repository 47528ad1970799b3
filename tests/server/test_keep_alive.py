"""A client's pooled connection outlives its idle time on the server's side: huggingface_hub's
client (httpx) keeps an idle connection up to 5 s and sends its next request on it; the server keeps
it longer, so that request is answered, never reset mid-send."""

from __future__ import annotations

import http.client
import time
from urllib.parse import urlsplit

from console.server.serve import KEEP_ALIVE_SECONDS


def test_a_connection_idle_as_long_as_a_client_keeps_it_still_answers(server):
    assert KEEP_ALIVE_SECONDS > 5 + 5  # httpx's keep-alive expiry, with room for a slow machine
    url = urlsplit(server.url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    headers = {"Authorization": f"Bearer {server.token}"}
    try:
        conn.request("GET", "/api/whoami-v2", headers=headers)
        first = conn.getresponse()
        first.read()
        assert first.status == 200
        time.sleep(6)  # idle past httpx's 5 s expiry (and uvicorn's own default of 5 s)
        conn.request("GET", "/api/whoami-v2", headers=headers)  # on the same connection
        again = conn.getresponse()
        again.read()
        assert again.status == 200 and conn.sock is not None
    finally:
        conn.close()
