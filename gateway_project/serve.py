"""`python -m gateway_project.serve gateway_project.asgi:application [uvicorn options]`: uvicorn's command line
with the gateway's HTTP protocol (request head size limit, request read deadline: server_protocol.py) in
place of httptools, for `--http auto` (the default) and `--http httptools`, and uvicorn's server with the
drain of gateway_project/draining.py (on SIGTERM: readiness 503 for GATEWAY_DRAIN_SECONDS while still serving,
then the graceful shutdown; exit status 0).

Proxy headers (`X-Forwarded-For`, `X-Forwarded-Proto`) are off unless trusted proxies are configured: uvicorn
turns them on by default, trusting 127.0.0.1, which wraps every request in its proxy-headers middleware (CPU
on every request, measured in docs/performance.md) and lets any local process choose the client address the
gateway sees. `--forwarded-allow-ips <proxies>` or `FORWARDED_ALLOW_IPS` (or an explicit `--proxy-headers`)
turns them on, trusting those addresses."""

from __future__ import annotations

import importlib
import os
import sys

from uvicorn import config

PROTOCOL = "gateway_project.server_protocol:GatewayHttpProtocol"


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
    config.HTTP_PROTOCOLS["auto"] = PROTOCOL
    config.HTTP_PROTOCOLS["httptools"] = PROTOCOL
    sys.argv[1:] = with_proxy_headers_default(sys.argv[1:], os.environ)
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


if __name__ == "__main__":
    main()
