"""The shared send's pure parts: SSE decoding, status → kind mapping, Retry-After, credential scrubbing."""

from __future__ import annotations

import email.utils
import time

import pytest

from inference.providers.base import ProviderErrorKind
from inference.providers.errors import error_for_status, kind_for_status, parse_retry_after, scrub
from inference.providers.sse import ServerSentEvent, SSEDecoder


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.flush()


def test_sse_fields_multiline_data_and_comments():
    assert decode(b": keep-alive\n\nevent: a\ndata: one\ndata:two\nid: 3\nretry: 10\n\ndata: [DONE]\n\n") == [
        ServerSentEvent("a", "one\ntwo"),
        ServerSentEvent("", "[DONE]"),
    ]


@pytest.mark.parametrize("size", [1, 2, 3, 7])
def test_sse_any_chunking_and_line_ends_give_the_same_events(size):
    stream = b'event: x\r\ndata: {"a": "\xc3\xa9"}\r\n\r\ndata: b\rdata: c\r\r\ndata: d\n\n'
    chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
    assert decode(*chunks) == [
        ServerSentEvent("x", '{"a": "é"}'),
        ServerSentEvent("", "b\nc"),
        ServerSentEvent("", "d"),
    ]


def test_sse_unterminated_last_event_is_flushed_and_empty_events_are_skipped():
    assert decode(b"\n\nevent: only-type\n\ndata: last") == [ServerSentEvent("", "last")]


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (429, "", ProviderErrorKind.RATE_LIMITED),
        (529, "", ProviderErrorKind.OVERLOADED),
        (503, "Service Overloaded", ProviderErrorKind.OVERLOADED),
        (503, "maintenance", ProviderErrorKind.SERVER),
        (500, "", ProviderErrorKind.SERVER),
        (502, "", ProviderErrorKind.SERVER),
        (408, "", ProviderErrorKind.TIMEOUT),
        (504, "", ProviderErrorKind.TIMEOUT),
        (400, "", ProviderErrorKind.BAD_REQUEST),
        (404, "", ProviderErrorKind.BAD_REQUEST),
        (413, "", ProviderErrorKind.BAD_REQUEST),
        (422, "", ProviderErrorKind.BAD_REQUEST),
        (401, "", ProviderErrorKind.AUTH),
        (403, "", ProviderErrorKind.AUTH),
    ],
)
def test_status_mapping(status, body, kind):
    assert kind_for_status(status, body) is kind


def test_retry_after_seconds_milliseconds_and_date():
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < parse_retry_after({"retry-after": later}) <= 30
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_error_never_carries_the_credential():
    secret = "sk-live-abcdef123456"
    error = error_for_status(
        401, b'{"error": {"message": "Incorrect API key provided: sk-live-abcdef123456"}}', {}, secret
    )
    assert secret not in error.message and secret not in str(error.raw)
    assert error.raw == {"error": {"message": "Incorrect API key provided: ***"}}
    text_error = error_for_status(500, b"<html>bad key sk-live-abcdef123456</html>", {}, secret)
    assert text_error.raw == "<html>bad key ***</html>"
    assert scrub(["x", {"k": secret}], secret) == ["x", {"k": "***"}]
