"""Property: the worst-case estimate is >= what a provider bills, over generated request bodies.

For each generated (valid) Responses body, each wire format's adapter builds the request the provider would
receive (with the output cap the handler sends); two providers then bill it:

- the fake upstream's size billing (tests/fakes/fake_upstream.py: ceil(bytes / 4) + 4 per message + 8, an
  image at `image_tokens`; output = the cap it was sent);
- the worst tokenizer the bound allows: one token per UTF-8 byte of every string it was sent (the model
  name and the hashed safety identifier excluded: they are not prompt text) + 4 per message + 8.

The estimate's input bound must cover both and its output bound must be the cap that was sent.
"""

from __future__ import annotations

import string
from dataclasses import replace
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inference.handler import upstream_body, with_output_cap
from inference.pipeline.context import Credential
from inference.providers.base import UpstreamCall
from inference.providers.registry import get_adapter
from inference.schema import validate_body
from metering.estimate import token_bound
from tests.budgets.conftest import candidate, make_ctx
from tests.fakes.fake_upstream import billed_input_tokens

IMAGE_TOKENS = 1000
FORMATS = ("openai-responses", "openai-chat", "anthropic-messages")
NOT_PROMPT = frozenset({"model", "safety_identifier"})
IMAGE_PARTS = frozenset({"input_image", "image_url", "image"})

text = st.text(max_size=120)
names = st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=20)
image = st.builds(
    lambda data: {"type": "input_image", "image_url": "data:image/png;base64," + data, "detail": "auto"},
    st.text(alphabet=string.ascii_letters + string.digits + "+/", max_size=400),
)
part = st.one_of(st.builds(lambda t: {"type": "input_text", "text": t}, text), image)
message = st.builds(
    lambda role, content: {"type": "message", "role": role, "content": content},
    st.sampled_from(["user", "assistant", "system", "developer"]),
    st.one_of(text, st.lists(part, min_size=1, max_size=4)),
)
call_pair = st.builds(
    lambda call_id, name, arguments, output: [
        {"type": "function_call", "call_id": call_id, "name": name, "arguments": orjson.dumps(arguments).decode()},
        {"type": "function_call_output", "call_id": call_id, "output": output},
    ],
    names,
    names,
    st.dictionaries(names, text, max_size=3),
    text,
)
items = st.lists(st.one_of(message.map(lambda m: [m]), call_pair), min_size=1, max_size=5).map(
    lambda groups: [item for group in groups for item in group]
)
tool = st.builds(
    lambda name, description, props: {
        "type": "function",
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": {p: {"type": "string", "description": d} for p, d in props}},
    },
    names,
    text,
    st.lists(st.tuples(names, text), max_size=4),
)
schema_format = st.builds(
    lambda props: {
        "format": {
            "type": "json_schema",
            "name": "answer",
            "schema": {"type": "object", "properties": {p: {"type": "string", "description": d} for p, d in props}},
        }
    },
    st.lists(st.tuples(names, text), max_size=6),
)


@st.composite
def bodies(draw) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "vendor/model", "input": draw(st.one_of(text, items))}
    if draw(st.booleans()):
        body["instructions"] = draw(text)
    if draw(st.booleans()):
        body["tools"] = draw(st.lists(tool, min_size=1, max_size=3, unique_by=lambda t: t["name"]))
    if draw(st.booleans()):
        body["text"] = draw(schema_format)
    if draw(st.booleans()):
        body["max_output_tokens"] = draw(st.integers(1, 5000))
    return validate_body(body)


def _strings(value: Any, key: str = "") -> tuple[int, int, int]:
    """(UTF-8 bytes of the prompt strings, messages, images) of an upstream body."""
    if isinstance(value, str):
        return (0 if key in NOT_PROMPT else len(value.encode())), 0, 0
    if isinstance(value, dict):
        if value.get("type") in IMAGE_PARTS:
            return 0, 0, 1
        found = [_strings(v, k) for k, v in value.items()]
    elif isinstance(value, list):
        found = [_strings(v, key) for v in value]
    else:
        return 0, 0, 0
    return sum(f[0] for f in found), sum(f[1] for f in found), sum(f[2] for f in found)


def byte_tokenizer_bill(sent: dict[str, Any]) -> int:
    size, _, images = _strings(sent)
    messages = sent.get("messages") if isinstance(sent.get("messages"), list) else sent.get("input")
    count = len(messages) if isinstance(messages, list) else 1
    return size + 4 * count + 8 + images * IMAGE_TOKENS


def sent_cap(sent: dict[str, Any]) -> int | None:
    return next((sent[k] for k in ("max_output_tokens", "max_completion_tokens", "max_tokens") if k in sent), None)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies(), endpoint_cap=st.one_of(st.none(), st.integers(1, 64000)))
def test_the_estimate_is_at_least_what_a_provider_bills(body, endpoint_cap):
    for api_format in FORMATS:
        endpoint = replace(
            candidate("0.001", "0.002", max_output_tokens=endpoint_cap),
            api_format=api_format,
            max_image_tokens=IMAGE_TOKENS,
            base_url="http://127.0.0.1:9/v1",
        )
        ctx = make_ctx(None, body=body, candidates=[endpoint])
        call = UpstreamCall(
            body=with_output_cap(upstream_body(ctx), ctx, endpoint),
            upstream_model="model",
            base_url=endpoint.base_url,
            credential=Credential(api_key="sk-test"),
            stream=False,
        )
        sent = get_adapter(api_format).build_request(call).json
        bound = token_bound(body, endpoint)
        assert bound.input_tokens >= billed_input_tokens(sent, orjson.dumps(sent), IMAGE_TOKENS), api_format
        assert bound.input_tokens >= byte_tokenizer_bill(sent), api_format
        assert sent_cap(sent) == bound.output_tokens, api_format
