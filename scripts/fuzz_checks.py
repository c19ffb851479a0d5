"""Schemathesis hooks of `make fuzz` (loaded through SCHEMATHESIS_HOOKS=scripts.fuzz_checks).

`error_envelope`: every response with a status >= 400 is the gateway's error envelope
`{"error": {"code": <the HTTP status>, "message": "..."}}`, whatever operation or input produced it (on
POST /api/v1/messages Anthropic's `{"type": "error", "error": {"type", "message"}}`).
"""

from __future__ import annotations

import json

import schemathesis


@schemathesis.check
def error_envelope(ctx, response, case):
    if response.status_code < 400:
        return None
    try:
        body = json.loads(response.content)
    except ValueError as exc:
        raise AssertionError(f"error {response.status_code} is not JSON: {response.content[:200]!r}") from exc
    error = body.get("error") if isinstance(body, dict) else None
    # /messages and /messages/count_tokens answer in Anthropic's error shape, so the anthropic SDK raises its types
    if case.path.startswith("/api/v1/messages"):
        if body.get("type") != "error" or not isinstance(error, dict) or not isinstance(error.get("type"), str):
            raise AssertionError(f"error {response.status_code} is not in Anthropic's shape: {body!r}"[:300])
        if not isinstance(error.get("message"), str) or not error["message"]:
            raise AssertionError(f"error {response.status_code} has no message")
        return None
    if not isinstance(error, dict):
        raise AssertionError(f"error {response.status_code} is not in the envelope: {body!r}"[:300])
    if error.get("code") != response.status_code:
        raise AssertionError(f"envelope code {error.get('code')!r} differs from the status {response.status_code}")
    if not isinstance(error.get("message"), str) or not error["message"]:
        raise AssertionError(f"error {response.status_code} has no message")
    return None
