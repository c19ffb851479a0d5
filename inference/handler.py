"""The innermost handler of the inference chain: try candidates and credentials, answer JSON or SSE.

For each candidate (inference.routing) and each of its credentials (inference.credentials): call the
adapter. An authentication failure moves to the next credential; a retryable failure before the first
byte reached the client moves to the next candidate, and so does a refusal that concerns that endpoint only
(404 unknown model, 413, 422, context length exceeded); any other bad request stops, and so does a call the
provider may have billed (`maybe_billed`: a timeout after the send, JSON or a stream without its first event
in time; a 2xx answer cut, too large or unreadable; a 524): it is charged its hold (`charge_unanswered`,
marked `usage_estimated`) and not sent elsewhere, which would pay twice. Every
attempt is recorded in `ctx.outcome.attempts`. When everything failed, the error maps to 429 (every attempt
rate-limited), 524 (timeout), 529 (overloaded), 400 (the upstream refused the request) or 502, with
`error.metadata = {provider_name, raw, error_type}`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import hashlib
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from django.conf import settings

from gateway_project.api.errors import GatewayError
from gateway_project.pipeline import admitted
from inference.credentials import credentials_for
from inference.ingress import ingress_of
from inference.ingress.common import DEBUG_KEY
from inference.ingress.context_edits import CONTEXT_EDITS, edit_context
from inference.pipeline.context import Candidate, Context, Credential
from inference.providers.base import ProviderError, ProviderErrorKind, Timeouts, UpstreamCall
from inference.providers.registry import get_adapter
from inference.router_parameters import note_omitted, omit_unsupported, router_parameters_used
from inference.routing import remember_session, resolve_candidates
from inference.servertools.plan import needs_plan, prepare
from metering.cost import charge_unanswered, estimate_usage
from metering.estimate import output_token_cap

T = TypeVar("T")
SHAPE_KEY = "inference.plugins.shape"  # ctx.extras: (body, candidate) -> the body that candidate is sent
JSON_HEADERS = [(b"content-type", b"application/json")]
# Fields the gateway consumes itself; they never go upstream.
GATEWAY_FIELDS = frozenset(
    {
        "models",
        "provider",
        "route",
        "debug",
        "session_id",
        "trace",
        "plugins",
        "metadata",
        "user",
        "stream_options",
        "usage",
        "transforms",
    }
)
ERROR_MAPPING: dict[ProviderErrorKind, tuple[int, str, str]] = {
    ProviderErrorKind.RATE_LIMITED: (429, "rate_limit_exceeded", "Provider rate limit exceeded"),
    ProviderErrorKind.OVERLOADED: (529, "provider_overloaded", "Provider temporarily overloaded"),
    ProviderErrorKind.TIMEOUT: (524, "timeout", "Provider request timed out"),
    ProviderErrorKind.BAD_REQUEST: (400, "invalid_request", "Provider rejected the request"),
    ProviderErrorKind.AUTH: (502, "authentication", "Provider refused the credentials"),
    ProviderErrorKind.SERVER: (502, "server", "Provider returned error"),
}


def hash_identifier(organization_id: Any, value: str) -> str:
    return hashlib.sha256(f"{organization_id}:{value}".encode()).hexdigest()


def upstream_body(ctx: Context) -> dict[str, Any]:
    """The request as providers see it: gateway-only fields removed, `safety_identifier` hashed."""
    body = {k: v for k, v in ctx.body.items() if k not in GATEWAY_FIELDS}
    org = ctx.principal.organization_id if ctx.principal else ""
    identity = ctx.body.get("safety_identifier") or ctx.body.get("user") or f"account:{org}"
    body["safety_identifier"] = hash_identifier(org, identity)
    body.pop("model", None)
    return body


_timeouts: tuple[tuple[float, float, float, float], Timeouts] | None = None


def upstream_timeouts() -> Timeouts:
    """The upstream time limits from settings (rebuilt only when the settings change)."""
    global _timeouts
    values = (
        settings.GATEWAY_UPSTREAM_CONNECT_TIMEOUT,
        settings.GATEWAY_UPSTREAM_FIRST_BYTE_TIMEOUT,
        settings.GATEWAY_UPSTREAM_READ_TIMEOUT,
        settings.GATEWAY_UPSTREAM_TOTAL_TIMEOUT,
    )
    if _timeouts is None or _timeouts[0] != values:
        _timeouts = (values, Timeouts(connect=values[0], first_byte=values[1], read=values[2], total=values[3]))
    return _timeouts[1]


@functools.lru_cache(maxsize=256)
def candidate_timeouts(base: Timeouts, overrides: tuple[tuple[str, float], ...]) -> Timeouts:
    """`base` with the provider's own limits (the catalog's `timeouts`) applied."""
    return dataclasses.replace(base, **dict(overrides)) if overrides else base


def map_failure(errors: list[tuple[Candidate, ProviderError]]) -> GatewayError:
    """The client-facing error once every attempt failed."""
    candidate, last = errors[-1]
    if all(e.kind == ProviderErrorKind.RATE_LIMITED for _, e in errors):
        kind = ProviderErrorKind.RATE_LIMITED
    else:
        candidate, last = next((c, e) for c, e in reversed(errors) if e.kind != ProviderErrorKind.RATE_LIMITED)
        kind = last.kind
    status, error_type, message = ERROR_MAPPING[kind]
    headers: dict[str, str] = {}
    if kind == ProviderErrorKind.RATE_LIMITED:
        waits = [e.retry_after for _, e in errors if e.retry_after]
        headers["Retry-After"] = str(max(1, int(min(waits) + 0.999))) if waits else "1"
    raw = last.raw if last.raw is not None else last.message
    return GatewayError(
        status,
        f"{message}: {last.message}" if last.message else message,
        metadata={"provider_name": candidate.provider_slug, "raw": raw, "error_type": error_type},
        headers=headers,
    )


def _attempt(ctx: Context, candidate: Candidate, status: str) -> None:
    ctx.outcome.attempts.append({"model": candidate.model_slug, "provider": candidate.provider_slug, "status": status})


def with_output_cap(body: dict[str, Any], ctx: Context, candidate: Candidate) -> dict[str, Any]:
    """The upstream body with the output cap the worst-case estimate assumed (metering/estimate.py): sent when
    the request sets none, or lowered to the endpoint's cap when the request asks for more."""
    cap = output_token_cap(ctx.body, candidate)
    if body.get("max_output_tokens") == cap:
        return body
    return {**body, "max_output_tokens": cap}


async def _answer_json(ctx: Context, responder: Any, call: UpstreamCall, candidate: Candidate, cred: Credential):
    adapter = get_adapter(candidate.api_format)
    try:
        result = await adapter.complete(call)
    except asyncio.CancelledError:
        if not ctx.not_admitted:  # (gone while waiting at the call's gate: nothing was sent)
            charge_unanswered(ctx, candidate, cred.is_byok)  # the provider may bill what it was asked for
        raise
    except ProviderError as error:
        if error.maybe_billed:  # a timeout after the send, a 2xx answer cut or unreadable: no fallback, its hold
            charge_unanswered(ctx, candidate, cred.is_byok)
        raise
    _settle(ctx, candidate, cred, "success")  # the adapter awaited the call's gate: the request was admitted
    if (ctx.body.get("debug") or {}).get("echo_upstream_body"):
        ctx.extras[DEBUG_KEY] = _debug_body(adapter, call)
    # The ingress renders its wire format and records the outcome (status, usage, cost, output, first byte).
    payload = ingress_of(ctx).json_answer(ctx, result, candidate, cred.is_byok)
    await responder.send_json(200, payload)


def _settle(ctx: Context, candidate: Candidate, cred: Credential, status: str) -> None:
    outcome = ctx.outcome
    outcome.candidate = candidate
    outcome.credential_is_byok = cred.is_byok
    _attempt(ctx, candidate, status)
    remember_session(ctx, candidate)


async def _answer_stream(ctx: Context, responder: Any, call: UpstreamCall, candidate: Candidate, cred: Credential):
    adapter = get_adapter(candidate.api_format)
    events = adapter.stream(call).__aiter__()
    writer = None
    try:
        try:
            event = await events.__anext__()  # a failure here can still fall back
        except asyncio.CancelledError:
            if not ctx.not_admitted:  # (gone while waiting at the call's gate: nothing was sent)
                charge_unanswered(ctx, candidate, cred.is_byok)
            raise
        except ProviderError as error:
            if error.maybe_billed:  # no first event in time after the send, a 2xx stream unreadable: its hold
                charge_unanswered(ctx, candidate, cred.is_byok)
            raise
        _settle(ctx, candidate, cred, "success")  # the adapter awaited the call's gate before this first event
        debug = _debug_body(adapter, call) if (ctx.body.get("debug") or {}).get("echo_upstream_body") else None
        writer = ingress_of(ctx).stream_writer(ctx, responder, candidate, cred.is_byok)
        ctx.extras["inference.stream"] = writer
        await writer.open(debug)
        try:
            while not await writer.handle(event):
                event = await events.__anext__()
        except StopAsyncIteration:
            await _fail_stream(ctx, writer, candidate, ProviderError(ProviderErrorKind.SERVER, "stream ended early"))
        except ProviderError as error:
            await _fail_stream(ctx, writer, candidate, error)
    finally:
        if writer is not None and ctx.outcome.status not in ("completed", "incomplete"):
            estimate_usage(ctx, writer.streamed_text())
        await events.aclose()


async def _fail_stream(ctx: Context, writer: Any, candidate: Candidate, error: ProviderError) -> None:
    """A failure after the first byte: no fallback any more; `error` + `response.failed` end the stream."""
    status, error_type, _ = ERROR_MAPPING[error.kind]
    metadata = _meta(candidate, error_type, error.raw)
    ctx.outcome.error = GatewayError(status, f"Provider stream failed: {error.message}", metadata=metadata)
    ctx.outcome.attempts[-1]["status"] = error.kind.value
    await writer.fail(ctx.outcome.error.message, error_type, metadata)


SECRET_NAMES = frozenset({"api_key", "apikey", "api-key", "authorization", "x-api-key", "secret", "password"})


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _redact(v) for k, v in value.items() if k.lower() not in SECRET_NAMES}
    if isinstance(value, list):
        return [_redact(v) for v in value]
    return value


def _debug_body(adapter: Any, call: UpstreamCall) -> dict[str, Any]:
    """The transformed upstream body for `debug.echo_upstream_body`, without credentials."""
    return _redact(adapter.build_request(call).json)


def _meta(candidate: Candidate, error_type: str, raw: Any = None) -> dict[str, Any]:
    return {"provider_name": candidate.provider_slug, "raw": raw, "error_type": str(error_type)}


async def handle(ctx: Context) -> None:
    """Answer the request from the first candidate that works (through the server-tool loop when it has one)."""
    responder = ctx.extras["inference.responder"]
    plan = prepare(ctx) if needs_plan(ctx) else None
    candidates = await resolve_candidates(ctx)
    stream = ctx.stream
    ctx.outcome.streamed = stream
    if plan is not None:
        from inference.servertools.loop import run_loop

        ingress_of(ctx).check_server_tools(plan)
        if ctx.admission is not None:
            # Awaited here, not at the first model call's gate: the plugins and server tools of the loop may call
            # out (a web fetch, a search, a plugin's own model call) before that call is made.
            await admitted(ctx)
        await run_loop(ctx, responder, candidates, plan)
        return
    answer = _answer_stream if stream else _answer_json

    async def attempt(call: UpstreamCall, candidate: Candidate, cred: Credential) -> None:
        await answer(ctx, responder, call, candidate, cred)

    await call_with_fallback(ctx, candidates, upstream_body(ctx), stream, attempt)
    ctx.outcome.completed_at = datetime.now(UTC)


async def call_with_fallback(
    ctx: Context,
    candidates: list[Candidate],
    body: dict[str, Any],
    stream: bool,
    attempt: Callable[[UpstreamCall, Candidate, Credential], Awaitable[T]],
    committed: Callable[[], bool] | None = None,
) -> T:
    """`attempt` on each candidate and credential in turn until one works; its result.

    A failure moves on while nothing was sent to the client (`committed()`, default: the first byte went
    out); an authentication failure tries the candidate's next credential. The admission checks sent ahead,
    while they are pending, go with the call as its `gate`, which the adapter awaits before anything of its answer
    goes out (an HTTP adapter right before its request is written, so the request is built while they travel).
    """
    errors: list[tuple[Candidate, ProviderError]] = []
    timeouts = upstream_timeouts()
    shape = ctx.extras.get(SHAPE_KEY)  # plugins that rewrite the body per candidate (inference.plugins)
    used = router_parameters_used(body)  # sampling parameters: each endpoint is sent those it supports
    for candidate in candidates:
        sent = body
        if used:
            sent, omitted = omit_unsupported(body, used, candidate)
            note_omitted(ctx, omitted)
        if shape is not None:
            try:
                sent = shape(body, candidate)
            except ProviderError as error:  # a plugin cannot serve this candidate (a file it cannot read, ...)
                _attempt(ctx, candidate, "skipped_by_plugin")
                errors.append((candidate, error.with_traceback(None)))
                continue
        if CONTEXT_EDITS in sent and candidate.api_format != "anthropic-messages":
            sent = edit_context(ctx, sent)  # a Messages request's context_management, applied by the gateway
        credentials = await credentials_for(ctx, candidate)
        if not credentials:
            _attempt(ctx, candidate, "no_credentials")
            continue
        for cred in credentials:
            # The admission checks sent ahead (the spend hold, the rate-limit check) traveled while this call was
            # prepared; the adapter awaits them (the call's gate) before anything reaches the upstream or the client.
            gate = functools.partial(admitted, ctx) if ctx.admission is not None else None
            call = UpstreamCall(
                body=with_output_cap(sent, ctx, candidate),
                upstream_model=candidate.upstream_model,
                base_url=candidate.base_url,
                credential=cred,
                stream=stream,
                timeouts=candidate_timeouts(timeouts, candidate.timeout_overrides),
                gate=gate,
            )
            try:
                return await attempt(call, candidate, cred)
            except ProviderError as error:
                if committed() if committed is not None else ctx.outcome.first_byte_sent:
                    raise
                _attempt(ctx, candidate, error.kind.value)
                # Kept for its kind and message only; its traceback holds this frame, which holds `errors`.
                errors.append((candidate, error.with_traceback(None)))
                if error.kind == ProviderErrorKind.AUTH:
                    continue
                if not error.retryable and not error.endpoint_specific:
                    raise map_failure(errors) from None
                break  # the next candidate (an endpoint-specific refusal, such as an unknown model, too)
    if not errors:
        raise GatewayError(
            502,
            "No provider credentials are configured for " + ", ".join(sorted({c.provider_slug for c in candidates})),
            metadata={
                "provider_name": candidates[0].provider_slug if candidates else None,
                "raw": None,
                "error_type": "provider_unavailable",
            },
        )
    raise map_failure(errors)
