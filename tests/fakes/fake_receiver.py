"""A loopback HTTP receiver standing in for observability destinations (webhook, OTLP collector, Langfuse...).

It records every request (method, path, headers, body) and answers from a script of responses (status,
headers, body), then with the default. `stop()` and `start()` on the same port simulate an outage.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b"{}"


class FakeReceiver:
    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.requests: list[Received] = []
        self.script: list[Reply] = []
        self.default = Reply()
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reply_with(self, *replies: Reply) -> None:
        with self.lock:
            self.script.extend(replies)

    def _next_reply(self) -> Reply:
        with self.lock:
            return self.script.pop(0) if self.script else self.default

    def _handler(self):
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver.lock:
                    receiver.requests.append(Received(self.command, self.path, headers, body))
                reply = receiver._next_reply()
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(reply.body)

            do_POST = do_PUT = _handle

            def log_message(self, *args):
                pass

        return Handler

    def start(self) -> FakeReceiver:
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), self._handler())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
