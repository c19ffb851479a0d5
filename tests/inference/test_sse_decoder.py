"""The SSE decoder's fast path (inference/providers/sse.py) against a line-by-line reference decoder of the
WHATWG event-stream rules, over generated streams cut into arbitrary chunks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from inference.providers.sse import ServerSentEvent, SSEDecoder


def reference(body: bytes) -> list[ServerSentEvent]:
    """Every event of a whole body, one line at a time (the format's own algorithm, no chunking)."""
    text = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    events, event, data = [], "", []
    lines = text.split(b"\n")
    for position, line in enumerate(lines):
        last = position == len(lines) - 1
        if last and not line:
            break
        if not line:
            if data:
                events.append(ServerSentEvent(event, "\n".join(data)))
            event, data = "", []
            continue
        if line.startswith(b":"):
            continue
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            data.append(value.decode("utf-8", "replace"))
        elif name == b"event":
            event = value.decode("utf-8", "replace")
    if data:  # an unterminated last event (flush at end of stream)
        events.append(ServerSentEvent(event, "\n".join(data)))
    return events


def decode(body: bytes, cuts: list[int]) -> list[ServerSentEvent]:
    decoder, events, start = SSEDecoder(), [], 0
    for cut in [*sorted({c % (len(body) + 1) for c in cuts}), len(body)]:
        events += decoder.feed(body[start:cut])
        start = cut
    return events + decoder.flush()


LINES = st.sampled_from(
    [
        b"data: hello",
        b"data:hello",
        b"data:  two spaces",
        b"data",
        b"data:",
        b"event: response.output_text.delta",
        b"event:x",
        b"event",
        b": a comment",
        b"id: 7",
        b"retry: 10",
        b"datum: not a field",
        b'data: {"type":"response.output_text.delta","delta":"\xc3\xa9t\xc3\xa9"}',
        b"data: \xff\xfe invalid utf-8",
        b"",
    ]
)
ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(LINES, ENDS), max_size=30), st.lists(st.integers(min_value=0, max_value=2000), max_size=12))
def test_chunked_decoding_equals_the_reference(lines, cuts):
    body = b"".join(line + end for line, end in lines)
    assert decode(body, cuts) == reference(body)


def test_an_unterminated_last_event_is_flushed():
    assert decode(b"event: e\ndata: a\ndata: b", []) == [ServerSentEvent("e", "a\nb")]
