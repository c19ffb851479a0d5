"""The adapter contract every provider format implements, and the canonical types adapters produce.

Routing (inference.routing / the innermost handler) only ever sees these types:

- `UpstreamCall`: what to call (the validated Responses body, the endpoint's upstream model, base URL and
  the credential of this attempt, stream or not, time limits).
- `Adapter.complete(call) -> CanonicalResult` for a JSON answer.
- `Adapter.stream(call)`: async iterator of `TextDelta` / `ReasoningDelta` / `OutputItemDone` / `FunctionCallDelta` /
  `FunctionCallDone` events, each group followed by a `Flush` (the events before it arrived together: the writer
  sends them to the client in one write), ending with one `StreamDone` carrying the full `CanonicalResult`. The
  first event is never a `Flush`.
- `ProviderError(kind, ...)`: every upstream failure mapped to a small set of kinds routing acts on.
  `before_first_event` tells routing whether falling back to another candidate is still possible.

Adapters are pure `build_request` / `parse_response` / stream-parser functions plus a thin send
(inference.providers.http), so they can be tested without a network and BYOK keys pass per call.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from inference.pipeline.context import Credential, Usage


class ProviderErrorKind(StrEnum):
    RATE_LIMITED = "rate_limited"  # 429
    OVERLOADED = "overloaded"  # 529, 503 overloaded
    TIMEOUT = "timeout"  # no first byte / no progress in time
    BAD_REQUEST = "bad_request"  # 400/404/413/422 from upstream: the request itself is wrong
    AUTH = "auth"  # 401/403: this credential is refused
    SERVER = "server"  # 5xx, connection errors, malformed answers, a stream cut in the middle


RETRYABLE_KINDS = frozenset(
    {
        ProviderErrorKind.RATE_LIMITED,
        ProviderErrorKind.OVERLOADED,
        ProviderErrorKind.TIMEOUT,
        ProviderErrorKind.SERVER,
        ProviderErrorKind.AUTH,
    }
)


class ProviderError(Exception):
    """An upstream failure, mapped to a kind."""

    def __init__(
        self,
        kind: ProviderErrorKind,
        message: str,
        *,
        status: int | None = None,
        raw: Any = None,
        retry_after: float | None = None,
        before_first_event: bool = True,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status
        self.raw = raw
        self.retry_after = retry_after
        self.before_first_event = before_first_event
        # The request cannot succeed at this endpoint but may at another one (the model is unknown there, the
        # body too large for it, its context too small): routing moves to the next candidate.
        self.endpoint_specific = False
        # The upstream may have done (and billed) the work: a timeout after the send (a JSON answer or a
        # stream's first event not in time), a 2xx answer cut, too large or unreadable, a 524. Sending the same
        # request elsewhere would pay twice, so routing does not fall back; the request is charged its hold.
        self.maybe_billed = False

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE_KINDS and not self.maybe_billed


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float = 10.0
    first_byte: float = 60.0  # stream: from the send until the first event
    read: float = 120.0  # stream: between two events (bytes that carry no event, such as comments, do not count)
    total: float = 600.0  # JSON: from the send until the whole body was read (the answer comes when it is done)


@dataclass(slots=True)
class UpstreamCall:
    """One attempt at one endpoint with one credential."""

    body: dict[str, Any]  # validated Responses request body (already rewritten by middlewares)
    upstream_model: str
    base_url: str
    credential: Credential
    stream: bool
    timeouts: Timeouts = field(default_factory=Timeouts)
    extra_headers: dict[str, str] = field(default_factory=dict)
    # The admission checks sent ahead (gateway_project.pipeline.admitted), still pending when the call was made.
    # Every adapter awaits it before anything of its answer can go out, and lets what it raises (a refusal) go
    # through as it is: an HTTP adapter once its request is built, right before it is written (outside the
    # upstream time limits); the echo adapter before it answers or streams its first event.
    gate: Callable[[], Awaitable[None]] | None = None


@dataclass(slots=True)
class UpstreamRequest:
    """An HTTP request an adapter built: used for the send and, with secrets removed, for debug echo."""

    url: str
    headers: dict[str, str]
    json: dict[str, Any]


@dataclass(slots=True)
class CanonicalResult:
    """A complete answer in Responses terms."""

    upstream_id: str
    output: list[dict[str, Any]]  # Responses output items (message with output_text parts, function_call, ...)
    usage: Usage
    status: str = "completed"  # completed | incomplete
    incomplete_reason: str | None = None  # max_output_tokens | content_filter
    finish_reason: str = "stop"  # stop | length | tool_calls | content_filter | ...
    context_management: dict[str, Any] | None = None  # Anthropic's `context_management` of the answer (applied edits)

    @property
    def text(self) -> str:
        parts = []
        for item in self.output:
            if item.get("type") == "message":
                parts.extend(p.get("text", "") for p in item.get("content", []) if p.get("type") == "output_text")
        return "".join(parts)


@dataclass(slots=True)
class TextDelta:
    text: str
    logprobs: list[dict[str, Any]] | None = (
        None  # the log-probability entries of this text, when the upstream gave them
    )


@dataclass(slots=True)
class ReasoningDelta:
    """A piece of the model's reasoning text (thinking, a reasoning summary), when the provider returns it;
    `signature`: the provider's signature of the reasoning so far (Anthropic), which a client must send back."""

    text: str
    signature: str = ""
    summary: bool = False  # a reasoning summary (OpenAI's reasoning_summary_text), not the reasoning text itself
    item_id: str = ""  # the upstream's id of the reasoning item (a Responses upstream), kept for the client


@dataclass(slots=True)
class OutputItemDone:
    """A finished output item of a Responses upstream that is neither a message nor a function call (a reasoning
    item with its `encrypted_content`, a hosted tool's call), passed on to the client as the upstream gave it."""

    item: dict[str, Any]


@dataclass(slots=True)
class RedactedReasoning:
    """Reasoning the provider returned encrypted only (Anthropic's `redacted_thinking` block's `data`), which a
    client must send back as it was."""

    data: str


@dataclass(slots=True)
class FunctionCallDone:
    call_id: str
    name: str
    arguments: str
    namespace: str = ""  # the `namespace` tool the function belongs to, when the client declared one


@dataclass(slots=True)
class FunctionCallDelta:
    """A piece of a function call's arguments as the upstream streams them (the first one of a call may be empty: the
    call started); the call ends with its `FunctionCallDone` (same `call_id`), whose arguments the pieces add up to."""

    call_id: str
    name: str
    delta: str
    namespace: str = ""


@dataclass(slots=True)
class StreamDone:
    result: CanonicalResult


@dataclass(frozen=True, slots=True)
class Flush:
    """The events yielded since the last Flush arrived together (one upstream read): write them now."""


FLUSH = Flush()

CanonicalEvent = (
    TextDelta
    | ReasoningDelta
    | RedactedReasoning
    | OutputItemDone
    | FunctionCallDelta
    | FunctionCallDone
    | Flush
    | StreamDone
)


class Adapter:
    """Base class of the adapters. `api_format` is the catalog's value for the provider."""

    api_format: ClassVar[str]

    def build_request(self, call: UpstreamCall) -> UpstreamRequest:
        raise NotImplementedError

    async def complete(self, call: UpstreamCall) -> CanonicalResult:
        raise NotImplementedError

    def stream(self, call: UpstreamCall) -> AsyncIterator[CanonicalEvent]:
        raise NotImplementedError
