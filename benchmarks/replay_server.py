"""A `ThreadingHTTPServer` that answers each request with a recorded answer held in memory.

    python benchmarks/replay_server.py ANSWERS PORT

ANSWERS is a pickle of ``{(method, path with query): (status, [(header, value), ...], body)}``
written by `bench_hub.py` from the console server's own answers to one `snapshot_download`. Served
over HTTP/1.1 with keep-alive, it costs the server next to nothing per request: what
`snapshot_download` takes against it is the client's own floor. An unknown request is a 404.
"""

from __future__ import annotations

import http.server
import pickle
import sys
from pathlib import Path


def main(answers_path: str, port: int) -> None:
    answers = pickle.loads(Path(answers_path).read_bytes())  # noqa: S301 (written by bench_hub.py)

    class Replay(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self) -> None:
            status, headers, body = answers.get((self.command, self.path), (404, [], b""))
            self.send_response_only(status)
            length = str(len(body))
            for name, value in headers:
                if name.lower() == "content-length":
                    length = value  # a HEAD's: the file's size
                else:
                    self.send_header(name, value)
            self.send_header("Content-Length", length)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        do_GET = do_HEAD = _answer

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Replay)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
