"""The worst-case cost of a request, computed before it goes upstream: an upper bound of what any candidate
provider can bill for it, without a tokenizer.

The bound rests on one assumption: **no tokenizer produces more tokens than the UTF-8 bytes of the text plus
its framing** (byte-level BPE tokenizers emit at most one token per byte; the framing is the chat template's
special tokens around messages, tools and the request). So:

- input tokens <= the UTF-8 size of the whole canonical request serialized as JSON (every field that can
  reach the provider: `instructions`, `input` with its items, tool outputs, `tools`, `text.format.schema`,
  `prompt.variables`, ...; the JSON keys and punctuation of every item are counted as well, which covers the
  per-message framing), plus `REQUEST_FRAMING_TOKENS` per request and `TOOLS_FRAMING_TOKENS` when tools
  are declared (the tool-use system prompt some providers add);
- each image, audio clip or file counts as the endpoint's per-item worst case from the catalog
  (`max_image_tokens`, `max_audio_tokens`, `max_file_tokens`) instead of its bytes; without one, as the
  context length (a provider bills no more input than its context window holds);
- a stored prompt template (`prompt.id`) counts as the whole context window (its text is not in the request);
- the input bound never exceeds the endpoint's context length (a longer prompt is refused, not billed);
- output tokens (reasoning included) <= the cap the gateway sends upstream (`output_token_cap`; the handler
  sends it when the request sets none, see inference/handler.py).

`token_bound` (one candidate) and `worst_case_tokens` (all candidates) are the token figures other limits
(rate limits in tokens per minute, per-turn holds of server-tool loops) can hold from; `worst_case_cost` is
the most expensive candidate's price for them (metering/prices.py). The policy steps of one request
(rate limits, then budgets) can share the walk of the body, the endpoint-independent part of the bound:
`request_prompt(ctx)` computes it once per request body and both pass it as `prompt=`.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson
from django.conf import settings

from gateway_project.pipeline import Candidate
from metering.prices import bound_cost, request_tier

REQUEST_FRAMING_TOKENS = 64
TOOLS_FRAMING_TOKENS = 1024
EMBEDDING_FRAMING_TOKENS = 4  # per input of an embeddings request
OUTPUT_FRAMING_TOKENS = 16  # an answer's own framing (end of turn, tool-call markers) when its output is counted
# Without a context length in the catalog, the most input a provider could bill for an unbounded item.
FALLBACK_CONTEXT_TOKENS = 1_000_000
MEDIA_PARTS = {"input_image": "max_image_tokens", "input_audio": "max_audio_tokens", "input_file": "max_file_tokens"}
_MEDIA_MARKERS = tuple(f'"{name}"'.encode() for name in MEDIA_PARTS)
# Fields the gateway consumes itself (inference.handler.GATEWAY_FIELDS, plus the model name): never billed.
_NOT_SENT = frozenset(
    {"models", "provider", "route", "debug", "session_id", "trace", "plugins", "metadata", "user", "stream_options"}
)


@dataclass(frozen=True, slots=True)
class TokenBound:
    """At most this many input and output tokens can be billed for the request on one endpoint."""

    input_tokens: int
    output_tokens: int


@dataclass(frozen=True, slots=True)
class _Prompt:
    """The endpoint-independent part of the input bound: text bytes, and the media items by kind."""

    text_tokens: int
    media: tuple[tuple[str, int], ...]  # (catalog field of the per-item worst case, count)
    template: bool  # a stored prompt template whose text is not in the request
    input: Any  # the request's `input` (an embeddings model bills it alone)
    ids: int | None  # its token ids, when it is a token array


def _walk_media(value: Any, counts: dict[str, int]) -> int:
    """Count media parts in `value`; returns the JSON bytes they take (replaced by their per-item worst case)."""
    if isinstance(value, dict):
        field = MEDIA_PARTS.get(value.get("type"))
        if field is not None:
            counts[field] = counts.get(field, 0) + 1
            return len(orjson.dumps(value))
        return sum(_walk_media(v, counts) for v in value.values())
    if isinstance(value, list):
        return sum(_walk_media(v, counts) for v in value)
    return 0


def _embedding_tokens(value: Any, ids: int | None) -> int:
    """An embeddings model bills its input alone: token ids exactly, text at its UTF-8 bytes, plus
    `EMBEDDING_FRAMING_TOKENS` per input (the begin / end tokens of each sequence)."""
    items = value if isinstance(value, list) else [value]
    if ids is not None:
        sequences = len(items) if isinstance(items[0], list) else 1
        return ids + EMBEDDING_FRAMING_TOKENS * sequences
    size = sum(len(item.encode()) if isinstance(item, str) else len(orjson.dumps(item)) for item in items)
    return size + EMBEDDING_FRAMING_TOKENS * len(items)


def _token_ids(value: Any) -> int | None:
    """The number of token ids of an /embeddings token-array input (counted exactly), else None."""
    if not isinstance(value, list) or not value or not isinstance(value[0], (int, list)):
        return None
    return sum(len(item) if isinstance(item, list) else 1 for item in value)


def _prompt(body: dict[str, Any]) -> _Prompt:
    sent = {k: v for k, v in body.items() if k not in _NOT_SENT}
    given = sent.get("input")
    ids = _token_ids(given)
    if ids is not None:  # token ids are what the provider bills: exact, not bounded by their JSON digits
        sent.pop("input")
    data = orjson.dumps(sent)
    size = len(data) + (ids or 0)
    counts: dict[str, int] = {}
    if any(marker in data for marker in _MEDIA_MARKERS):
        size -= _walk_media(sent, counts)
    framing = REQUEST_FRAMING_TOKENS + (TOOLS_FRAMING_TOKENS if body.get("tools") else 0)
    return _Prompt(
        text_tokens=size + framing,
        media=tuple(counts.items()),
        template=bool(body.get("prompt")),
        input=given,
        ids=ids,
    )


_PROMPT_MEMO = "metering.estimate.prompt"


def request_prompt(ctx: Any) -> _Prompt:
    """The endpoint-independent part of the input bound of `ctx.body`, walked once per request: memoized in
    `ctx.extras` with the body object it was computed from (a step that replaces `ctx.body` gets a fresh
    walk). For the policy steps before the handler, which do not change the body in place; pass it as the
    `prompt=` of `worst_case_tokens` / `worst_case_cost`."""
    memo = ctx.extras.get(_PROMPT_MEMO)
    body = ctx.body
    if memo is not None and memo[0] is body:
        return memo[1]
    prompt = _prompt(body)
    ctx.extras[_PROMPT_MEMO] = (body, prompt)
    return prompt


def _input_bound(prompt: _Prompt, candidate: Candidate) -> int:
    context = candidate.context_length or FALLBACK_CONTEXT_TOKENS
    if "embeddings" in candidate.output_modalities:
        return min(_embedding_tokens(prompt.input, prompt.ids), context)
    if prompt.template:
        return context
    tokens = prompt.text_tokens
    for field, count in prompt.media:
        per_item = getattr(candidate, field)
        tokens += count * (per_item if per_item else context)
    return min(tokens, context)


def output_token_cap(body: dict[str, Any], candidate: Candidate) -> int:
    """At most this many output tokens (reasoning included) can be billed for the request on `candidate`: the
    request's `max_output_tokens` within the endpoint's cap; else the endpoint's cap; else
    `GATEWAY_BUDGET_DEFAULT_OUTPUT_TOKENS` within the context length. The handler sends this cap upstream."""
    if "embeddings" in candidate.output_modalities:
        return 0  # an embeddings model produces no output tokens: it bills its input only
    caps = [cap for cap in (body.get("max_output_tokens"), candidate.max_output_tokens) if isinstance(cap, int)]
    if caps:
        return max(min(caps), 0)
    default = settings.GATEWAY_BUDGET_DEFAULT_OUTPUT_TOKENS
    return min(default, candidate.context_length) if candidate.context_length else default


def prompt_token_estimate(body: dict[str, Any], candidate: Candidate, bytes_per_token: float = 1.0) -> int:
    """The input bound of `body` on `candidate` without the context-length cap, its text counted at
    `bytes_per_token` (1: the upper bound above); media at their per-item worst cases. Context compression
    measures a prompt against the context window with it."""
    prompt = _prompt(body)
    framing = REQUEST_FRAMING_TOKENS + (TOOLS_FRAMING_TOKENS if body.get("tools") else 0)
    tokens = framing + int((prompt.text_tokens - framing) / bytes_per_token + 0.999)
    context = candidate.context_length or FALLBACK_CONTEXT_TOKENS
    for field, count in prompt.media:
        per_item = getattr(candidate, field)
        tokens += count * (per_item if per_item else context)
    return tokens


def input_token_bound(body: dict[str, Any], candidate: Candidate) -> int:
    """At most this many input tokens can be billed for the request on `candidate`."""
    return _input_bound(_prompt(body), candidate)


def token_bound(body: dict[str, Any], candidate: Candidate) -> TokenBound:
    """Worst-case input tokens and the output cap of the request on one candidate endpoint."""
    return TokenBound(input_token_bound(body, candidate), output_token_cap(body, candidate))


def worst_case_tokens(body: dict[str, Any], candidates: list[Candidate], prompt: _Prompt | None = None) -> TokenBound:
    """The largest input and output token bounds over the candidates (each maximised on its own); `prompt`:
    `request_prompt(ctx)` of this body, when the caller has it."""
    if prompt is None:
        prompt = _prompt(body)
    if not candidates:
        return TokenBound(prompt.text_tokens, 0)
    input_tokens = output_tokens = 0
    for candidate in candidates:  # a loop, not max() over generators: it runs for every rate-limited request
        tokens = _input_bound(prompt, candidate)
        if tokens > input_tokens:
            input_tokens = tokens
        tokens = output_token_cap(body, candidate)
        if tokens > output_tokens:
            output_tokens = tokens
    return TokenBound(input_tokens, output_tokens)


def candidate_worst_case(body: dict[str, Any], candidate: Candidate) -> Decimal:
    """The highest cost the request can have on `candidate` (USD)."""
    bound = token_bound(body, candidate)
    return bound_cost(candidate, bound.input_tokens, bound.output_tokens, request_tier(body))


def worst_case_cost(body: dict[str, Any], candidates: list[Candidate], prompt: _Prompt | None = None) -> Decimal:
    """The highest cost the request can have on any of its candidate endpoints (USD); `prompt`:
    `request_prompt(ctx)` of this body, when the caller has it."""
    if prompt is None:
        prompt = _prompt(body)
    tier = request_tier(body)
    worst = Decimal(0)
    for candidate in candidates:
        if candidate.is_free:
            continue
        cost = bound_cost(candidate, _input_bound(prompt, candidate), output_token_cap(body, candidate), tier)
        worst = max(worst, cost)
    return worst
