"""`python -m gateway_project.serve gateway_project.asgi:application [uvicorn options]`: uvicorn's command line
with the gateway's defaults, and uvicorn's server with the drain of gateway_project/draining.py (on SIGTERM:
readiness 503 for GATEWAY_DRAIN_SECONDS while still serving, then the graceful shutdown; exit status 0).

The HTTP protocol is uvicorn's own (httptools by default). What it does not limit, the size of a request's head
and the time the head may take to arrive, is limited by the reverse proxy in front (deploy/haproxy/haproxy.cfg);
with `--http h11` uvicorn limits the head itself: `--h11-max-incomplete-event-size` defaults here to
GATEWAY_MAX_HEADER_BYTES. The body's read deadline is the application's (gateway_project/read_deadline.py).
docs/deploy.md, "Request limits".

Proxy headers (`X-Forwarded-For`, `X-Forwarded-Proto`) are off unless trusted proxies are configured: uvicorn
turns them on by default, trusting 127.0.0.1, which wraps every request in its proxy-headers middleware (CPU
on every request, measured in docs/performance.md) and lets any local process choose the client address the
gateway sees. `--forwarded-allow-ips <proxies>` or `FORWARDED_ALLOW_IPS` (or an explicit `--proxy-headers`)
turns them on, trusting those addresses."""

from __future__ import annotations

import importlib
import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
    from django.conf import settings

    args = with_proxy_headers_default(sys.argv[1:], os.environ)
    sys.argv[1:] = with_head_limit_default(args, settings.GATEWAY_MAX_HEADER_BYTES)
    uvicorn_main = importlib.import_module("uvicorn.main")  # the module (`uvicorn.main` is also its function)

    from gateway_project.draining import DrainingServer

    uvicorn_main.Server = DrainingServer  # SIGTERM: leave the balancer's rotation first (draining.py)
    uvicorn_main.main()


def with_proxy_headers_default(args: list[str], environ) -> list[str]:
    """`args` with `--no-proxy-headers` added unless they, or FORWARDED_ALLOW_IPS, configure proxy headers."""
    configured = any(
        arg in ("--proxy-headers", "--no-proxy-headers") or arg.startswith("--forwarded-allow-ips") for arg in args
    )
    if configured or environ.get("FORWARDED_ALLOW_IPS"):
        return args
    return [*args, "--no-proxy-headers"]


def with_head_limit_default(args: list[str], max_header_bytes: int) -> list[str]:
    """`args` with `--h11-max-incomplete-event-size <max_header_bytes>` unless they set it (used by `--http h11`)."""
    if any(arg.startswith("--h11-max-incomplete-event-size") for arg in args):
        return args
    return [*args, "--h11-max-incomplete-event-size", str(max_header_bytes)]


if __name__ == "__main__":
    main()
