"""Request fields only some providers' wire formats carry: candidates that cannot honour them are left out.

- `modalities` with `image`: honoured by `openai-chat` endpoints of a model whose `output_modalities` has
  `image` (the Chat Completions `modalities` / `message.images` extension OpenRouter-compatible servers speak).
- `image_config`: forwarded to those same endpoints; it needs `modalities` with `image` (400 otherwise).
- `prompt_cache_options`: `openai-responses` endpoints (forwarded, and the `prompt_cache_breakpoint` markers
  of content parts are kept).
- `prompt` (a stored prompt): `openai-responses` endpoints (the provider stores the prompt).
- members the gateway does not know (inference.unknown_members): endpoints speaking the request's own format.
- `top_logprobs`, `temperature` above 1, `reasoning` (Anthropic's thinking limits), `service_tier`, `text.verbosity`,
  `reasoning.summary`: inference.routing_members.

Candidates that cannot honour a field the request uses are left out. When no candidate is left the request is
a 400 naming the field and saying why (never a silent drop). `modalities: ["text"]` (or none) asks for
nothing special. Image output is not streamed (400 naming
`modalities` with `stream: true`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway_project.api.errors import validation_error
from inference.pipeline.context import Candidate
from inference.routing_members import member_checks
from inference.unknown_members import FORWARDED, routing_check

IMAGE_OUTPUT_FORMATS = frozenset({"openai-chat"})


def wants_image_output(body: dict[str, Any]) -> bool:
    return "image" in (body.get("modalities") or ())


def _image_output(candidate: Candidate) -> bool:
    return candidate.api_format in IMAGE_OUTPUT_FORMATS and "image" in candidate.output_modalities


def feature_checks(
    body: dict[str, Any], stream: bool, ingress_format: str = "responses"
) -> list[tuple[str, str, Callable[[Candidate], bool]]]:
    """(field, why it was refused, predicate) for each special field the request uses; 400 for a bad pairing."""
    checks: list[tuple[str, str, Callable[[Candidate], bool]]] = []
    if FORWARDED in body:  # members the gateway does not know: only an upstream of the request's format
        checks.append(routing_check(body, ingress_format))
    if body.get("image_config") is not None and not wants_image_output(body):
        raise validation_error("image_config", "configures image output: it needs modalities with image")
    if wants_image_output(body):
        if stream:
            raise validation_error("modalities", "image output is not streamed by this gateway: send stream false")
        field = "image_config" if body.get("image_config") is not None else "modalities"
        reason = "no endpoint of the requested model(s) produces images through a format that carries it (openai-chat)"
        checks.append((field, reason, _image_output))
    if body.get("prompt_cache_options") is not None:
        reason = "only providers speaking the OpenAI Responses format (openai-responses) take prompt_cache_options"
        checks.append(("prompt_cache_options", reason, lambda c: c.api_format == "openai-responses"))
    if body.get("prompt") is not None:
        reason = "stored prompts are only passed to providers that store prompts (openai-responses)"
        checks.append(("prompt", reason, lambda c: c.api_format == "openai-responses"))
    checks.extend(member_checks(body))
    return checks
