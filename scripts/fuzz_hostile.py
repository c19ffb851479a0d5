"""The hostile-input pass of `make fuzz`: bodies nested too deeply and NUL characters, everywhere.

For every operation of the OpenAPI schema: each operation taking a JSON body gets one nested 100 levels
(past the gateway's limit of 64), one nested 1,000 levels (near the decoder's own limit), one whose key and
one whose value carry a NUL character (U+0000); every path with a parameter gets `%00` in it, and every
operation a `?x=%00` query. The data plane's Responses, Chat Completions and Messages bodies get the same
plus NUL and depth inside `metadata`, `trace` and `input`. Check: no 5xx (the limits answer 400 in the
envelope; 401/403/404/405/413/415 are fine). Returns (exit status, report).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

INFERENCE_BODIES = {
    "/api/v1/responses": {"model": "echo/echo-1", "input": "hi"},
    "/api/v1/chat/completions": {"model": "echo/echo-1", "messages": [{"role": "user", "content": "hi"}]},
    "/api/v1/messages": {"model": "echo/echo-1", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
}


def deep(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


def hostile_bodies(base: dict | None = None) -> list[tuple[str, bytes]]:
    base = base or {"name": "fuzz"}
    encoded = json.dumps(base)[1:-1]
    return [
        ("nested 100", b"{" + encoded.encode() + b', "x": ' + deep(100) + b"}"),
        ("nested 1000", b"{" + encoded.encode() + b', "x": ' + deep(1000) + b"}"),
        ("NUL in a key", json.dumps({**base, "k\u0000": "v"}).encode()),
        (
            "NUL in a value",
            json.dumps(
                {key: f"{value}\u0000" if isinstance(value, str) else value for key, value in base.items()}
            ).encode(),
        ),
        ("NUL in metadata", json.dumps({**base, "metadata": {"k": "v\u0000"}}).encode()),
        ("trace nested 300", b"{" + encoded.encode() + b', "trace": ' + deep(300) + b"}"),
    ]


def _send(base_url: str, key: str, method: str, path: str, body: bytes | None) -> int:
    request = urllib.request.Request(
        base_url + path,
        data=body,
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def run_hostile(base_url: str, management_key: str, inference_key: str) -> tuple[int, str]:
    with urllib.request.urlopen(base_url + "/api/v1/openapi.json", timeout=30) as response:
        schema = json.load(response)
    failures: list[str] = []
    sent = 0
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            inference = path in INFERENCE_BODIES
            key = inference_key if inference else management_key
            concrete = re.sub(r"\{[^}]+\}", "fuzz%00id", path)
            cases: list[tuple[str, str, bytes | None]] = [("NUL in the query", f"{concrete}?x=%00", None)]
            if concrete != path:
                cases.append(("NUL in the path", concrete, None))
            if "requestBody" in operation:
                target = path if inference else re.sub(r"\{[^}]+\}", "fuzz", path)
                cases += [(name, target, body) for name, body in hostile_bodies(INFERENCE_BODIES.get(path))]
            for name, target, body in cases:
                status = _send(base_url, key, method.upper(), target, body)
                sent += 1
                if status >= 500:
                    failures.append(f"{method.upper()} {path} ({name}): {status}")
    report = [f"hostile input: {sent} requests, {len(failures)} answered 5xx", *failures]
    return (1 if failures else 0), "\n".join(report)
