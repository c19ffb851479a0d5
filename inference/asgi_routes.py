"""ASGI HTTP routes of the data plane, matched before Django (see gateway_project/asgi.py)."""

http_routes: list = []
