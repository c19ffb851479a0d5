"""The types the request pipeline shares: who calls (Principal), what may serve (Candidate, Credential),
what limits spending (SpendLimit), and the one object every inference middleware reads and fills (Context).

They sit in the kernel, below every app that uses them (docs/architecture.md): plain dataclasses and protocols,
no model import, so gateway_project/, accounts/, inference/ and the apps above can all name them without
importing each other. `inference.pipeline.context` and `accounts.principal` re-export them.

Contract of the chain (inference/pipeline/runner.py): each middleware is `cls(get_response)` with
`async __call__(ctx) -> None`. `await get_response(ctx)` returns once the response has been fully
delivered to the client (JSON body sent, or the stream finished, failed or was cancelled), with the
outcome in `ctx.outcome`. A middleware refuses a request by raising `GatewayError` before calling
`get_response`; work that must happen after the call (settle a reservation, write the Generation) goes
in `try/finally` around it, because a client disconnect arrives as `asyncio.CancelledError`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from django.utils import timezone

from gateway_project.api.errors import GatewayError


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated API key with what the planes need about it (no ORM access after resolution)."""

    key_id: uuid.UUID
    key_hash: str
    key_name: str
    organization_id: uuid.UUID
    workspace_id: uuid.UUID
    user_id: uuid.UUID | None
    is_management: bool
    disabled: bool
    expires_at: datetime | None
    limit: Decimal | None
    limit_reset: str | None
    include_byok_in_limit: bool
    # Per-minute rate limits of the key and of its workspace (None: unlimited); see ratelimits/.
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    workspace_requests_per_minute: int | None = None
    workspace_tokens_per_minute: int | None = None
    response_cache: bool = False  # the workspace caches answers by default (responsecache/)

    # DRF reads request.user.is_authenticated.
    is_authenticated = True

    @classmethod
    def from_key(cls, key) -> Principal:
        """The principal of an API key row (accounts.ApiKey, its workspace loaded)."""
        return cls(
            key_id=key.id,
            key_hash=key.hash,
            key_name=key.name,
            organization_id=key.organization_id,
            workspace_id=key.workspace_id,
            user_id=key.creator_id,
            is_management=key.is_management,
            disabled=key.disabled,
            expires_at=key.expires_at,
            limit=key.limit,
            limit_reset=key.limit_reset,
            include_byok_in_limit=key.include_byok_in_limit,
            requests_per_minute=key.requests_per_minute,
            tokens_per_minute=key.tokens_per_minute,
            workspace_requests_per_minute=key.workspace.requests_per_minute,
            workspace_tokens_per_minute=key.workspace.tokens_per_minute,
            response_cache=key.workspace.response_cache_enabled,
        )

    def check_usable(self) -> None:
        """401 for a disabled or expired key."""
        if self.disabled:
            raise GatewayError(401, "API key is disabled")
        if self.expires_at is not None and self.expires_at <= timezone.now():
            raise GatewayError(401, "API key has expired")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A routable endpoint, snapshotted from the catalog (no ORM access on the hot path)."""

    endpoint_id: uuid.UUID
    model_slug: str
    canonical_slug: str
    vendor: str
    public: bool
    provider_slug: str
    provider_name: str
    api_format: str
    base_url: str
    platform_key_env: str
    upstream_model: str
    prompt_price: Decimal
    completion_price: Decimal
    cached_prompt_price: Decimal | None
    is_free: bool
    context_length: int | None
    max_output_tokens: int | None
    supported_parameters: tuple[str, ...]
    zdr: bool
    trains_on_data: bool
    publishes_prompts: bool
    regions: tuple[str, ...]
    input_modalities: tuple[str, ...]
    output_modalities: tuple[str, ...]
    # The rest of the price sheet (metering/prices.py) and the per-item worst cases of media inputs
    # (metering/estimate.py); None means "as the base price" / "up to the context length".
    cache_write_5m_price: Decimal | None = None
    cache_write_1h_price: Decimal | None = None
    reasoning_price: Decimal | None = None
    request_price: Decimal = Decimal(0)
    tier_multipliers: tuple[tuple[str, Decimal], ...] = ()
    max_image_tokens: int | None = None
    max_audio_tokens: int | None = None
    max_file_tokens: int | None = None
    # The provider's own time limits ((name, seconds) pairs over the GATEWAY_UPSTREAM_* settings).
    timeout_overrides: tuple[tuple[str, float], ...] = ()
    # Set on a candidate routing adds for the organization's BYOK keys whose `declared_zdr` differs from the
    # catalog's `zdr`: it carries the declared value as `zdr` and is tried with those keys only (byok.routing).
    byok_declared_zdr: bool | None = None
    # The model's operator-set quality per prompt category ((category, 0..1) pairs; inference/routers/quality.py).
    quality_scores: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class Credential:
    """The provider key one attempt is made with: a BYOK credential or the platform key."""

    api_key: str = field(repr=False)
    is_byok: bool = False
    byok_id: uuid.UUID | None = None
    label: str = ""


@dataclass(frozen=True, slots=True)
class EndpointFilter:
    """A predicate that removes routing candidates, with the reason shown when nothing is left."""

    reason: str
    allows: Callable[[Candidate], bool]
    # The guardrail stages shown in `service_metadata.pipeline` when this filter leaves no candidate (a guardrail's).
    stages: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class SpendLimit:
    """A spending limit that applies to this request (workspace budget, key limit, guardrail limit)."""

    scope: str  # "workspace" | "api-key" | "guardrail"
    scope_id: str  # workspace id, key hash, or guardrail id + subject
    name: str  # shown in the 402 message
    limit_usd: Decimal
    interval: str  # "daily" | "weekly" | "monthly" | "lifetime"
    include_byok: bool = False


@dataclass(slots=True)
class Usage:
    """Token counts and cost of one generation."""

    input_tokens: int = 0  # every prompt token: cached reads and cache writes included
    output_tokens: int = 0  # reasoning included
    cached_tokens: int = 0  # cache reads
    reasoning_tokens: int = 0
    cost: Decimal | None = None  # reported by the upstream; None means "compute from prices"
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    reported: bool = True  # False: the upstream's answer carried no usage
    estimated: bool = False  # the counts are the gateway's estimate (no usage reported, or the request was cut)
    tier: str | None = None  # the service tier the provider reports it served the request at (priced at it)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(slots=True)
class Outcome:
    """What happened upstream, filled by the innermost handler for the middlewares around it."""

    status: str = "failed"  # completed | incomplete | failed | cancelled
    candidate: Candidate | None = None
    credential_is_byok: bool = False
    upstream_id: str = ""
    finish_reason: str = ""
    usage: Usage = field(default_factory=Usage)
    cost: Decimal = Decimal(0)
    error: Any = None  # GatewayError when the request failed
    attempts: list[dict[str, Any]] = field(default_factory=list)  # [{model, provider, status}]
    streamed: bool = False
    first_byte_sent: bool = False
    ttft_ms: int | None = None
    latency_ms: int | None = None
    tool_calls: int = 0
    output_text: str = ""
    output: list[dict[str, Any]] = field(default_factory=list)  # Responses-format output items
    completed_at: datetime | None = None
    cache_hit: bool = False  # answered from the response cache (responsecache/): no upstream call, cost 0
    # The router parameters left out for the endpoint that answered (inference.router_parameters), public names.
    omitted_parameters: tuple[str, ...] = ()


@dataclass(slots=True)
class Context:
    """State of one inference request as it goes through the pipeline."""

    request_id: str
    created_at: datetime
    started: float  # time.perf_counter() at arrival
    method: str
    path: str
    host: str
    headers: dict[str, str]  # lower-case names
    raw_body: bytes
    client_address: str = ""  # the ASGI client's host (behind a trusted proxy, uvicorn's --proxy-headers set it)
    body: dict[str, Any] = field(default_factory=dict)  # the validated Responses request; middlewares may rewrite it
    principal: Principal | None = None
    policy_version: int = 0
    region: str = "global"
    metadata_enabled: bool = False  # X-Service-Metadata: enabled
    session_id: str | None = None
    endpoint_filters: list[EndpointFilter] = field(default_factory=list)
    candidates: list[Candidate] | None = None  # resolved lazily by inference.routing.resolve_candidates
    spend_limits: list[SpendLimit] = field(default_factory=list)
    reservation: Any = None  # owned by budgets.middleware
    pipeline: list[dict[str, Any]] = field(default_factory=list)  # service_metadata.pipeline stages
    preset: Any = None  # owned by presets.middleware
    guardrail_policy: Any = None  # owned by guardrails.middleware
    outcome: Outcome = field(default_factory=Outcome)
    extras: dict[str, Any] = field(default_factory=dict)  # per-app scratch space, keyed by app label
    ingress_format: str = "responses"  # the client's wire format (inference.models.IngressFormat)
    client_ip: str = ""  # the peer address of the connection (the ASGI scope's client)
    ingress: Any = None  # the inference.ingress.Ingress the request came through (None: Responses)
    admission: Admission | None = None  # the checks sent ahead, not awaited yet (ratelimits, budgets): `admitted`
    not_admitted: bool = False  # an admission check refused the request or failed: it is not a recorded request

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))


class Admission:
    """The admission checks sent ahead for one request, owned by it (`ctx.admission`) until they are awaited.

    A policy middleware sends its check (`send_ahead`) and goes on with the chain while the check's reply
    travels: ratelimits.middleware the rate-limit decision, budgets.middleware the spend hold (which is sent while
    the rate-limit check travels). Each check is a callable that awaits its reply and raises its refusal. `wait`
    is the one place they are awaited, in the order they were sent, so a 429 comes before a 402 and a refused
    check leaves the later ones unawaited (their middleware releases what they took)."""

    __slots__ = ("checks",)

    def __init__(self, check: Callable[[], Awaitable[None]]) -> None:
        self.checks = [check]

    async def wait(self) -> None:
        for check in self.checks:
            await check()


def send_ahead(ctx: Context, check: Callable[[], Awaitable[None]]) -> None:
    """Add `check` to the request's admission checks (the first one creates its `Admission`)."""
    if ctx.admission is None:
        ctx.admission = Admission(check)
    else:
        ctx.admission.checks.append(check)


async def admitted(ctx: Context) -> None:
    """Await the request's admission checks (`Admission.wait`) once, if any are pending; raises the first refusal
    (or the check's own failure) and marks the request `not_admitted`.

    This is the one function that awaits them; where a request goes determines which of these calls it first,
    and the others then read the outcome (`ctx.admission` is None, `ctx.not_admitted`):

    - the upstream call's gate (`UpstreamCall.gate`, set by inference.handler.call_with_fallback): every adapter
      awaits it before anything of its answer goes out, an HTTP adapter once its request is built, right before
      it is written, so the checks travel while the call is prepared. The handler reads the outcome after it;
    - before the server-tool loop (inference.handler.handle): its plugins and tools may call out first;
    - the chain's innermost handler when its calls carry no gate (/embeddings, the token count;
      inference.pipeline.runner.build_chain);
    - the response cache, before it answers a hit (no upstream call) or names the cache in a header;
    - a request that failed before any of those: AccountingMiddleware before it records it (a refused request is
      not recorded, an admitted one is, and its hold settled), RateLimitMiddleware for a failure raised outside
      AccountingMiddleware. The decision may still be on its way there: a refusal comes first, replacing the error.
    """
    admission = ctx.admission
    if admission is not None:
        ctx.admission = None
        try:
            await admission.wait()
        except BaseException:
            ctx.not_admitted = True
            raise


class OrganizationKeys(Protocol):
    """The organization's own provider keys (BYOK) as routing sees them; byok/ provides it (inference.credentials)."""

    async def usable_credentials(self, ctx: Context, candidate: Candidate) -> list[Credential]:
        """The organization's keys to try for `candidate`, in order, before the platform key."""

    async def platform_key_allowed(self, ctx: Context, candidate: Candidate) -> bool:
        """False when an organization key takes the platform key away for this candidate."""

    async def declared_zdr_by_provider(self, ctx: Context) -> Mapping[str, frozenset[bool]]:
        """Provider slug -> the ZDR values the organization's keys declare (routing adds those variants)."""
