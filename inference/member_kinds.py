"""What the gateway does with a member of a wire format (the `Handling` column of the member tables of
inference.members), and the notes several tables share. Kept apart from the tables so the typed requests
(inference.responses_request) can declare their rows without importing the tables built from them.

Handling values:
- `honoured`: native on an upstream of the same format, translated for the others;
- `router parameter`: sent to the endpoints that support it, left out for the others and reported
  (inference.router_parameters); `provider.require_parameters: true` keeps only endpoints supporting it;
- `gateway`: the gateway applies it itself (routing, plugins, accounting) and never sends it upstream;
- `partly`: some values honoured, the others refused with a 400 saying why;
- `refused`: always a 400 with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

HONOURED = "honoured"
ROUTER = "router parameter"
GATEWAY = "gateway"
PARTLY = "partly"
REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class Member:
    handling: str
    note: str


SAMPLING = "sent to endpoints whose `supported_parameters` has it (and whose format carries it), left out otherwise"
ROUTING = "routing, as on `/responses` (docs/inference.md)"
USAGE = (
    "`{include}`: usage with `cost` is in every answer; on a stream `include: true` adds the final usage chunk "
    "(as `stream_options.include_usage`); `false` removes nothing"
)
TRANSFORMS = '`["middle-out"]` turns on the `context-compression` plugin; `[]` asks for nothing (the default)'
CACHE = (
    "`{type: ephemeral, ttl?}`: marks the last cacheable block. Anthropic-format endpoints get it on that block; "
    "chat-format endpoints declaring `cache_control` get it on the last content part; others cache by themselves "
    "and it is left out (reported)"
)
MODELS = "fallback models, tried after `model`; an unknown one is skipped (`service_metadata.skipped_models`)"
TIER = (
    "auto, default (every provider); priority, fast (OpenAI, Anthropic); flex, scale (OpenAI); other chat vendors: "
    "forwarded unless the endpoint's `supported_parameters` leave it out; the answer's "
    "`service_tier` is the tier the provider says it served (null when it does not say)"
)
CACHE_KEY = "forwarded to OpenAI endpoints; on every format the same key stays on one endpoint (its prompt cache)"
TEMPERATURE = "0..2 (Anthropic endpoints: 0..1, skipped above; none left → 400)"
SPEED_REFUSED = "a Messages member; on this format ask for service_tier fast (or priority)"
