"""The data plane's HTTP/1.1 client for upstream calls: one pool of keep-alive connections per event loop,
responses parsed by httptools (the parser uvicorn serves with), bodies handed over as they arrive.

Made for what an upstream call needs and nothing else (a POST with a body, its answer read whole or as it
streams), so a call costs a fraction of a general-purpose client's CPU: the request's head is written with
its body in one write, a small answer that arrives with its head is returned without another wake-up, and
nothing is copied between the socket and the caller but the body's chunks (docs/performance.md).

- `http://` and `https://` (certificates verified against the system's CAs, or the pool's `ssl_context`;
  SNI set); no proxy (upstream hosts come from the catalog only), no redirects (the caller refuses a 3xx),
  no cookies, no User-Agent. A URL's userinfo is sent as Basic credentials (unless the request sets
  Authorization); its path and query are percent-encoded.
- Sends `Host`, `Content-Length`, and, unless the request sets them, `Accept: */*` and `Accept-Encoding:
  gzip, deflate`; a gzip (one member or several) or deflate (zlib-wrapped or raw) answer is decompressed as
  it is read, never to more bytes than the caller's bound (`Response.limit`) plus one chunk, and a
  compressed body itself past the bound is refused before it is inflated; one that ends before its end,
  data after a deflate stream, or another content coding is `ResponseCutShort`.
- A header whose name is not an RFC 9110 token or whose value has a control character other than a tab is
  refused before anything is sent (`InvalidRequest`: no header injection, no second Content-Length).
- Connections: at most `limit` open at once (more callers wait for one, within the connect limit), idle ones
  kept `keepalive` seconds and reused per origin; an answer complete on a keep-alive connection whose
  request was sent whole returns it to the pool (once: a second `release()` does nothing), any other end (an
  error, a body not read to its end, a reset, `close()`) closes it. 1xx answers are skipped (101 refused).
- A stream's consumer slower than the upstream: reading pauses once `PAUSE_BYTES` are buffered unread and
  resumes when the consumer catches up (the upstream then waits on TCP, as it would for a slow client).

Failures are exceptions the caller maps (inference.providers.errors): `ConnectTimeout` (a TimeoutError: no
free or new connection within the connect limit, nothing sent), `ConnectFailed` (refused, unknown host, TLS handshake),
`ResponseCutShort` (the connection ended inside the body, or the body is not valid chunked or compressed
data), `UpstreamDisconnected` (closed before the answer's head, an invalid answer).

Modules: `errors` (the failures), `request` (the request's target and head), `decoding` (gzip and deflate
bodies), `response` (an answer being read), `pool` (the connections and the pool of each event loop).
"""

from inference.providers.upstream.errors import (
    ConnectFailed,
    ConnectTimeout,
    InvalidRequest,
    ResponseCutShort,
    UpstreamDisconnected,
)
from inference.providers.upstream.pool import UpstreamPool, close_pool, get_pool
from inference.providers.upstream.request import Prepared, prepare
from inference.providers.upstream.response import Headers, Response

__all__ = [
    "ConnectFailed",
    "ConnectTimeout",
    "Headers",
    "InvalidRequest",
    "Prepared",
    "Response",
    "ResponseCutShort",
    "UpstreamDisconnected",
    "UpstreamPool",
    "close_pool",
    "get_pool",
    "prepare",
]
