"""The outbound HTTP client of the process: aiohttp, one pooled session per event loop, shared by the provider
calls (inference.providers.http), the web-search engines (inference.search) and the observability delivery
worker; the model's web fetch has a session of its own behind the SSRF guard (inference.web.fetch).

- `session`: the session of each event loop (`get_session`, `close_session`): keep-alive connections (at most
  1000 open, idle ones reused per origin and closed after 60 s), TLS verified against the system's CAs, no
  cookies, no User-Agent, `Accept: */*` and `Accept-Encoding: gzip, deflate` unless set, answers decompressed
  as they are read (never further than the reader asks: a compressed bomb is not inflated past the caller's
  bound); redirects are the caller's choice (provider calls and deliveries refuse them, the search engines'
  calls follow them); `connect_timeout` the per-call limit object. HTTP/1.1 only: aiohttp has no HTTP/2.
- `proxy`: `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY`, read once per process (`proxy_for_url`).
"""

from inference.providers.upstream.proxy import UnsupportedProxy, proxy_for_url, reload
from inference.providers.upstream.session import close_session, connect_timeout, get_session, new_session

__all__ = [
    "UnsupportedProxy",
    "close_session",
    "connect_timeout",
    "get_session",
    "new_session",
    "proxy_for_url",
    "reload",
]
