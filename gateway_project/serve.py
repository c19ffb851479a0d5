"""`python -m gateway_project.serve gateway_project.asgi:application [uvicorn options]`: uvicorn's command line
with the gateway's HTTP protocol (request head size limit, request read deadline: server_protocol.py) in
place of httptools, for `--http auto` (the default) and `--http httptools`."""

from __future__ import annotations

import os

from uvicorn import config

PROTOCOL = "gateway_project.server_protocol:GatewayHttpProtocol"


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
    config.HTTP_PROTOCOLS["auto"] = PROTOCOL
    config.HTTP_PROTOCOLS["httptools"] = PROTOCOL
    from uvicorn.main import main as uvicorn_main

    uvicorn_main()


if __name__ == "__main__":
    main()
