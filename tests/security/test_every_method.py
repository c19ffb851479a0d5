"""Every route of both planes answers every HTTP method without a server error: the routes are walked from the URL
resolver (the management plane, the Django admin) and the data plane's ASGI routes, a sample path is generated
for each from its pattern, and GET, HEAD, POST, PUT, PATCH, DELETE and OPTIONS are sent with a management key,
then with no key, through the loopback server. `OPTIONS /api/v1/cache/purge` was a 500 (DRF's default OPTIONS
answer builds the view's serializer, which most of the gateway's views choose per action)."""

from __future__ import annotations

import re
from re import _parser as sre_parse  # type: ignore[attr-defined]

import httpx
import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from inference.asgi_routes import http_routes

pytestmark = pytest.mark.django_db(transaction=True)

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
C = sre_parse  # opcodes live in the parser module's namespace


def _sample(parsed) -> str:
    """One string the parsed regular expression matches (the first alternative, the fewest repetitions)."""
    out = []
    for op, arg in parsed:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "NOT_LITERAL":
            out.append("a" if chr(arg) != "a" else "b")
        elif name == "ANY":
            out.append("a")
        elif name == "IN":
            out.append(_sample_in(arg))
        elif name == "SUBPATTERN":
            out.append(_sample(arg[-1]))
        elif name == "BRANCH":
            out.append(_sample(arg[1][0]))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _high, item = arg
            out.append(_sample(item) * max(low, 1))
        elif name in ("AT", "ASSERT", "ASSERT_NOT", "GROUPREF"):
            continue
        else:
            raise AssertionError(f"unexpected regex construct {name}")
    return "".join(out)


def _sample_in(items) -> str:
    negate = any(str(op) == "NEGATE" for op, _ in items)
    if negate:
        return "a"
    op, arg = items[0]
    name = str(op)
    if name == "LITERAL":
        return chr(arg)
    if name == "RANGE":
        return chr(arg[0])
    if name == "CATEGORY":
        return "1" if "DIGIT" in str(arg) else "a"
    raise AssertionError(f"unexpected class construct {name}")


def sample_path(regex: str) -> str:
    return _sample(sre_parse.parse(regex))


def walk(patterns, prefix: str = "") -> list[str]:
    """A sample path of every route under `patterns`."""
    paths = []
    for entry in patterns:
        regex = entry.pattern.regex.pattern
        if isinstance(entry, URLResolver):
            paths += walk(entry.url_patterns, prefix + sample_path(regex))
        elif isinstance(entry, URLPattern):
            paths.append(prefix + sample_path(regex))
    return paths


def every_path() -> list[str]:
    management = walk(get_resolver().url_patterns)
    data_plane = [sample_path(route.pattern.regex.pattern) for route in http_routes]
    return sorted({"/" + path.lstrip("/") for path in management + data_plane})


def test_the_walk_finds_both_planes():
    paths = every_path()
    for expected in ("/api/v1/cache/purge", "/api/v1/responses", "/api/v1/messages", "/admin/", "/api/v1/openapi.json"):
        assert expected in paths or expected + "/" in paths, expected
    assert len(paths) > 100


def test_every_method_on_every_route_is_answered_without_a_server_error(gateway_server, org):
    failures = []
    with httpx.Client(base_url=gateway_server.url, timeout=30) as client:
        for key in (org.management_key, None):
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            for path in every_path():
                if re.search(r"logout", path):
                    continue
                for method in METHODS:
                    body = b"{}" if method in ("POST", "PUT", "PATCH") else None
                    response = client.request(
                        method, path, content=body, headers={**headers, "Content-Type": "application/json"}
                    )
                    if response.status_code >= 500:
                        failures.append(f"{method} {path} ({'key' if key else 'no key'}): {response.status_code}")
    assert failures == []


def test_options_on_the_purge_route_describes_it(api):
    response = api.options("/api/v1/cache/purge")
    assert response.status_code == 200, response.content
    assert response.json()["methods"] == ["POST", "OPTIONS"]
    assert response["Allow"] == "POST, OPTIONS"
