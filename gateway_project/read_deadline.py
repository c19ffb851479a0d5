"""The request body's read deadline, as ASGI middleware around every HTTP route (gateway_project/asgi.py).

A request whose body has not fully arrived `GATEWAY_REQUEST_READ_TIMEOUT_SECONDS` (default 60 s; 0: no deadline)
after its head is answered 408 with the error envelope and `connection: close` when no answer has started (uvicorn
then closes the connection), and the application reads `http.disconnect`. Without it a body that trickles in
forever holds a connection (and Django's request thread on the management plane) forever.

uvicorn has no such option, and none for the head: the size of a request's head and the time it may take to
arrive are the reverse proxy's (deploy/haproxy/haproxy.cfg: `timeout http-request`, `tune.bufsize`), or, with
no proxy in front, uvicorn's h11 protocol's (`--http h11`: `--h11-max-incomplete-event-size`, which
gateway_project/serve.py sets to `GATEWAY_MAX_HEADER_BYTES`). docs/deploy.md, "Request limits".

`receive` and `send` are wrapped by plain functions returning uvicorn's own awaitables (no coroutine of their own:
a stream's every event goes through `send`); once the body is in, `receive` is uvicorn's again.
"""

from __future__ import annotations

import asyncio

import orjson
from django.conf import settings

from gateway_project.api.errors import error_envelope

_DISCONNECT = {"type": "http.disconnect"}


class _Reading:
    """One request's state: whether its body is in, its answer started, its 408 sent."""

    __slots__ = ("answered", "body_in", "deadline", "receive", "send", "started")

    def __init__(self, receive, send, deadline: float) -> None:
        self.receive, self.send, self.deadline = receive, send, deadline
        self.body_in = self.started = self.answered = False

    def receive_in_time(self):
        if self.body_in:
            return self.receive()
        return self._receive_before_deadline()

    async def _receive_before_deadline(self):
        if self.answered:
            return _DISCONNECT
        try:
            async with asyncio.timeout_at(self.deadline):
                message = await self.receive()
        except TimeoutError:
            await self._refuse()
            return _DISCONNECT
        if message["type"] != "http.request" or not message.get("more_body"):
            self.body_in = True
        return message

    def send_unless_answered(self, message):
        if self.answered:  # the 408 was the answer: the application's own goes nowhere
            return _nothing()
        if message["type"] == "http.response.start":
            self.started = True
        return self.send(message)

    async def _refuse(self) -> None:
        self.answered = True
        if self.started:  # too late for a 408: the connection closes when the application ends its answer
            return
        timeout = settings.GATEWAY_REQUEST_READ_TIMEOUT_SECONDS
        body = orjson.dumps(error_envelope(408, f"Request not received within {timeout:g} s"))
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
            (b"x-content-type-options", b"nosniff"),
        ]
        await self.send({"type": "http.response.start", "status": 408, "headers": headers})
        await self.send({"type": "http.response.body", "body": body})


async def _nothing() -> None:
    return None


def read_deadline(app):
    """`app` (ASGI, HTTP) with the request body's read deadline."""

    async def guarded(scope, receive, send):  # a coroutine function: ASGI 3 to asgiref's and uvicorn's checks
        timeout = settings.GATEWAY_REQUEST_READ_TIMEOUT_SECONDS
        if not timeout:
            return await app(scope, receive, send)
        reading = _Reading(receive, send, asyncio.get_running_loop().time() + timeout)
        return await app(scope, reading.receive_in_time, reading.send_unless_answered)

    return guarded
