"""Member x provider format: what each accepted request member of each ingress does on each provider format.

One registry, `MATRIX`, keyed `(ingress, member)` (ingress: a table of inference/members.py, `responses`,
`chat-completions`, `messages`; member: a top-level member or a dotted sub-member), gives the request fragment
that exercises the member and, for each provider format it can reach (`openai-responses`, `openai-chat`,
`anthropic-messages`: the fake upstream through the loopback gateway), the EFFECT to assert: what the upstream
received, what the client got back, which provider was chosen, or the 400 naming the member (the effects:
tests/contract/effects.py). The tests of tests/contract/test_member_matrix.py are generated from it (one per
cell); the same file fails when an accepted member of a table has no entry here, or an entry names a member
the table no longer has.
"""

from __future__ import annotations

import json

from tests.contract.effects import (
    CHAT,
    CHAT_TOOL,
    CLAUDE,
    CLAUDE_TOOL,
    DELETE,
    FORMATS,
    SCHEMA,
    SEARCH,
    SHORT,
    TOOL,
    UPSTREAM,
    Entry,
    answered,
    both,
    calls,
    carries,
    check,
    chose,
    ends_with_usage,
    every,
    identity,
    kept_or_refused,
    mentions,
    omitted,
    per,
    refused,
    row,
    sampling,
    sent,
    sticky_key,
)

# Cells issue 37 lists as silently dropped (accepted, neither honoured nor refused); fixed on the `members` branch.
# Such a cell is run: it passes once the member is honoured or refused, and is an expected failure until then.
KNOWN_DROPS: set[tuple[str, str, str]] = set()  # cells of members still dropped silently: none


def _gateway_members(search: dict = SEARCH) -> dict[str, Entry]:
    """The members every ingress shares that the gateway applies itself (routing, loop bounds, observability)."""
    return {
        "models": Entry({"model": DELETE, "models": ["{model}"]}, every(lambda f: sent("model", UPSTREAM[f]))),
        "provider": Entry(
            {"model": "route-{fmt}/order", "provider": {"order": ["order-{fmt}-dear"]}},
            every(lambda f: chose(f"order-{SHORT[f]}-dear")),
        ),
        "provider.data_collection": Entry(
            {"model": "route-{fmt}/dc", "provider": {"data_collection": "deny"}},
            every(lambda f: chose(f"dc-{SHORT[f]}-clean")),
        ),
        "provider.zdr": Entry(
            {"model": "route-{fmt}/dc", "provider": {"zdr": True}}, every(lambda f: chose(f"dc-{SHORT[f]}-clean"))
        ),
        "provider.max_price.prompt": Entry(
            {"model": "route-{fmt}/prompt", "provider": {"max_price": {"prompt": 1}}},
            every(lambda f: chose(f"prompt-{SHORT[f]}-even")),
        ),
        "provider.max_price.completion": Entry(
            {"model": "route-{fmt}/completion", "provider": {"max_price": {"completion": 1}}},
            every(lambda f: chose(f"completion-{SHORT[f]}-even")),
        ),
        "provider.max_price.request": Entry(
            {"model": "route-{fmt}/request", "provider": {"max_price": {"request": 0.01}}},
            every(lambda f: chose(f"request-{SHORT[f]}-nofee")),
        ),
        "provider.only": Entry(
            {"model": "route-{fmt}/order", "provider": {"only": ["order-{fmt}-dear"]}},
            every(lambda f: chose(f"order-{SHORT[f]}-dear")),
        ),
        "provider.ignore": Entry(
            {"model": "route-{fmt}/order", "provider": {"ignore": ["order-{fmt}-cheap"]}},
            every(lambda f: chose(f"order-{SHORT[f]}-dear")),
        ),
        "provider.sort": Entry(
            {
                "model": "route-{fmt}/order",
                "provider": {"sort": {"by": "price", "partition": "none"}},
                "models": ["route-{fmt}/cheaper"],
            },
            every(lambda f: chose(f"cheaper-{SHORT[f]}-only")),
        ),
        "route": Entry(
            {"model": "route-{fmt}/order", "route": "sort", "models": ["route-{fmt}/cheaper"]},
            every(lambda f: chose(f"cheaper-{SHORT[f]}-only")),
        ),
        "session_id": Entry({"session_id": "sess-7"}, every(row("session_id", "sess-7"))),
        "trace": Entry({"trace": {"trace_id": "trace-7"}}, every(row("trace", {"trace_id": "trace-7"}))),
        "plugins": Entry(
            {"plugins": [{"id": "web", "max_results": 1}]},
            every(mentions("weather.example.com")),
        ),
        "max_tool_calls": Entry(
            {"tools": [search], "max_tool_calls": 0},
            every(check("no server tool offered", lambda s: s.status == 200 and "web_search" not in str(s.last))),
        ),
        "stop_server_tools_when": Entry(
            {"tools": [search], "stop_server_tools_when": [{"type": "step_count_is", "step_count": 1}]},
            every(calls(2)),
            script="search-then-answer",
        ),
    }


def _responses() -> dict[str, Entry]:
    fmt_tool = per(carries("tools", "lookup"), carries("tools", "lookup"), carries("tools", "lookup"))
    return {
        **_gateway_members(),
        "model": Entry({}, every(lambda f: sent("model", UPSTREAM[f]))),
        "input": Entry(
            {"input": [{"role": "user", "content": "Ping-7"}]},
            per(carries("input", "Ping-7"), carries("messages", "Ping-7"), carries("messages", "Ping-7")),
        ),
        "instructions": Entry(
            {"instructions": "Be brief."},
            per(sent("instructions", "Be brief."), carries("messages", "Be brief."), carries("system", "Be brief.")),
        ),
        "tools": Entry({"tools": [TOOL]}, fmt_tool),
        "tool_choice": Entry(
            {"tools": [TOOL], "tool_choice": "required"},
            per(sent("tool_choice", "required"), sent("tool_choice", "required"), sent("tool_choice.type", "any")),
        ),
        "parallel_tool_calls": Entry(
            {"tools": [TOOL], "parallel_tool_calls": False},
            per(
                sent("parallel_tool_calls", False),
                sent("parallel_tool_calls", False),
                sent("tool_choice.disable_parallel_tool_use", True),
            ),
        ),
        "text": Entry(
            {"text": {"format": {"type": "json_schema", "name": "answer", "schema": SCHEMA, "strict": True}}},
            per(
                sent("text.format.schema", SCHEMA),
                sent("response_format.json_schema.schema", SCHEMA),
                sent("output_format.schema", SCHEMA),
            ),
        ),
        "reasoning": Entry(
            {"reasoning": {"effort": "high"}, "max_output_tokens": 4096},
            per(sent("reasoning.effort", "high"), sent("reasoning_effort", "high"), sent("thinking.type", "enabled")),
        ),
        "max_output_tokens": Entry(
            {"max_output_tokens": 33},
            per(sent("max_output_tokens", 33), sent("max_tokens", 33), sent("max_tokens", 33)),
        ),
        "temperature": Entry({"temperature": 0.3}, sampling("temperature", 0.3, FORMATS)),
        "top_p": Entry({"top_p": 0.4}, sampling("top_p", 0.4, FORMATS)),
        "top_k": Entry({"top_k": 7}, sampling("top_k", 7, (CHAT, CLAUDE))),
        "min_p": Entry({"min_p": 0.1}, sampling("min_p", 0.1, ())),
        "top_a": Entry({"top_a": 0.1}, sampling("top_a", 0.1, ())),
        "frequency_penalty": Entry({"frequency_penalty": 0.5}, sampling("frequency_penalty", 0.5, (CHAT,))),
        "presence_penalty": Entry({"presence_penalty": -0.5}, sampling("presence_penalty", -0.5, (CHAT,))),
        "repetition_penalty": Entry({"repetition_penalty": 1.1}, sampling("repetition_penalty", 1.1, ())),
        "top_logprobs": Entry(
            {"top_logprobs": 3}, per(sent("top_logprobs", 3), sent("top_logprobs", 3), refused("top_logprobs"))
        ),
        "cache_control": Entry(
            {"cache_control": {"type": "ephemeral", "ttl": "1h"}},
            per(
                omitted("cache_control"),
                omitted("cache_control"),
                sent("messages.0.content.0.cache_control", {"type": "ephemeral", "ttl": "1h"}),
            ),
        ),
        "stream": Entry({"stream": True}, every(sent("stream", True)), stream=True),
        "stream_options": Entry(
            {"stream": True, "stream_options": {"include_usage": True}},
            every(check("the stream ends with the usage", ends_with_usage)),
            stream=True,
        ),
        "include": Entry(
            {"include": ["reasoning.encrypted_content"]},
            per(
                sent("include", ["reasoning.encrypted_content"]),
                sent("model", UPSTREAM[CHAT]),
                sent("model", UPSTREAM[CLAUDE]),
            ),
        ),
        "metadata": Entry(
            {"metadata": {"order": "A-17"}},
            every(both(answered("metadata", {"order": "A-17"}), row("metadata", {"order": "A-17"}))),
        ),
        "client_metadata": Entry(
            {"client_metadata": {"app": "x"}},
            per(
                both(sent("client_metadata", {"app": "x"}), row("client_metadata", {"app": "x"})),
                row("client_metadata", {"app": "x"}),
                row("client_metadata", {"app": "x"}),
            ),
        ),
        "user": Entry({"user": "customer-42"}, identity("user")),
        "safety_identifier": Entry({"safety_identifier": "customer-42"}, identity("safety_identifier")),
        "prompt_cache_key": Entry(
            {"prompt_cache_key": "k1"},
            per(
                sent("prompt_cache_key", "k1"),
                sticky_key("prompt_cache_key"),
                sticky_key("prompt_cache_key"),
            ),
        ),
        "prompt_cache_options": Entry(
            {"prompt_cache_options": {"mode": "explicit"}},
            per(
                sent("prompt_cache_options", {"mode": "explicit"}),
                refused("prompt_cache_options"),
                refused("prompt_cache_options"),
            ),
        ),
        "prompt": Entry(
            {"prompt": {"id": "pmpt_1"}}, per(sent("prompt", {"id": "pmpt_1"}), refused("prompt"), refused("prompt"))
        ),
        "service_tier": Entry(
            {"service_tier": "flex"},
            per(
                sent("service_tier", "flex"),
                kept_or_refused("service_tier", "flex"),
                kept_or_refused("service_tier", "flex"),
            ),
        ),
        "truncation": Entry(
            {"truncation": "auto"}, per(sent("truncation", "auto"), refused("truncation"), refused("truncation"))
        ),
        "modalities": Entry({"modalities": ["text", "image"]}, every(refused("modalities"))),
        "image_config": Entry({"image_config": {"aspect_ratio": "1:1"}}, every(refused("image_config"))),
        "store": Entry({"store": True}, every(refused("store"))),
        "background": Entry({"background": True}, every(refused("background"))),
        "previous_response_id": Entry({"previous_response_id": "resp_1"}, every(refused("previous_response_id"))),
        "conversation": Entry({"conversation": "conv_1"}, every(refused("conversation"))),
        "transforms": Entry(
            {"transforms": ["middle-out"], "input": "word " * 9000},
            every(check("the middle was removed", lambda s: s.status == 200 and len(json.dumps(s.last)) < 40000)),
        ),
        "usage": Entry(
            {"usage": {"include": True}},
            every(check("usage with cost", lambda s: s.status == 200 and s.answer["usage"]["cost"] > 0)),
        ),
        "debug": Entry(
            {"debug": {"echo_upstream_body": True}},
            every(check("the upstream body echoed", lambda s: s.status == 200 and UPSTREAM[s.fmt] in s.text)),
        ),
    }


def _shared(long_input: dict) -> dict[str, Entry]:
    """What every ingress does the same way: usage, debug, transforms, identity, streaming."""
    return {
        "stream": Entry({"stream": True}, every(sent("stream", True)), stream=True),
        "transforms": Entry(
            {"transforms": ["middle-out"], **long_input},
            every(check("the middle was removed", lambda s: s.status == 200 and len(json.dumps(s.last)) < 40000)),
        ),
        "debug": Entry(
            {"debug": {"echo_upstream_body": True}},
            every(check("the upstream body echoed", lambda s: s.status == 200 and UPSTREAM[s.fmt] in s.text)),
        ),
    }


LONG_MESSAGES = {
    "messages": [{"role": ("user", "assistant")[i % 2], "content": f"turn {i} " + "word " * 2000} for i in range(7)]
}
JSON_SCHEMA_EFFECTS = per(
    sent("text.format.schema", SCHEMA),
    sent("response_format.json_schema.schema", SCHEMA),
    sent("output_format.schema", SCHEMA),
)
MAX_33 = per(sent("max_output_tokens", 33), sent("max_tokens", 33), sent("max_tokens", 33))
REASONING = per(
    check("reasoning asked", lambda s: s.status == 200 and s.last["reasoning"]["effort"]),
    check("reasoning asked", lambda s: s.status == 200 and s.last["reasoning_effort"]),
    sent("thinking.type", "enabled"),
)


def _chat() -> dict[str, Entry]:
    return {
        **_gateway_members(),
        **_shared(LONG_MESSAGES),
        "model": Entry({}, every(lambda f: sent("model", UPSTREAM[f]))),
        "messages": Entry(
            {"messages": [{"role": "user", "content": "Ping-7"}]},
            per(carries("input", "Ping-7"), carries("messages", "Ping-7"), carries("messages", "Ping-7")),
        ),
        "tools": Entry({"tools": [CHAT_TOOL]}, every(carries("tools", "lookup"))),
        "tool_choice": Entry(
            {"tools": [CHAT_TOOL], "tool_choice": "required"},
            per(sent("tool_choice", "required"), sent("tool_choice", "required"), sent("tool_choice.type", "any")),
        ),
        "parallel_tool_calls": Entry(
            {"tools": [CHAT_TOOL], "parallel_tool_calls": False},
            per(
                sent("parallel_tool_calls", False),
                sent("parallel_tool_calls", False),
                sent("tool_choice.disable_parallel_tool_use", True),
            ),
        ),
        "response_format": Entry(
            {"response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}},
            JSON_SCHEMA_EFFECTS,
        ),
        "verbosity": Entry(
            {"verbosity": "low"},
            per(
                sent("text.verbosity", "low"), kept_or_refused("verbosity", "low"), kept_or_refused("verbosity", "low")
            ),
        ),
        "max_completion_tokens": Entry({"max_completion_tokens": 33}, MAX_33),
        "max_tokens": Entry({"max_tokens": 33}, MAX_33),
        "reasoning": Entry({"reasoning": {"effort": "high"}, "max_tokens": 4096}, REASONING),
        "reasoning_effort": Entry({"reasoning_effort": "high", "max_tokens": 4096}, REASONING),
        "include_reasoning": Entry({"include_reasoning": True, "max_tokens": 4096}, REASONING),
        "temperature": Entry({"temperature": 0.3}, sampling("temperature", 0.3, FORMATS)),
        "top_p": Entry({"top_p": 0.4}, sampling("top_p", 0.4, FORMATS)),
        "top_k": Entry({"top_k": 7}, sampling("top_k", 7, (CHAT, CLAUDE))),
        "min_p": Entry({"min_p": 0.1}, sampling("min_p", 0.1, ())),
        "top_a": Entry({"top_a": 0.1}, sampling("top_a", 0.1, ())),
        "frequency_penalty": Entry({"frequency_penalty": 0.5}, sampling("frequency_penalty", 0.5, (CHAT,))),
        "presence_penalty": Entry({"presence_penalty": -0.5}, sampling("presence_penalty", -0.5, (CHAT,))),
        "repetition_penalty": Entry({"repetition_penalty": 1.1}, sampling("repetition_penalty", 1.1, ())),
        "seed": Entry({"seed": 7}, sampling("seed", 7, (CHAT,))),
        "logit_bias": Entry({"logit_bias": {"50256": -100}}, sampling("logit_bias", {"50256": -100}, (CHAT,))),
        "stop": Entry({"stop": ["END"]}, per(omitted("stop"), sent("stop", ["END"]), sent("stop_sequences", ["END"]))),
        "cache_control": Entry(
            {"cache_control": {"type": "ephemeral"}},
            per(
                omitted("cache_control"),
                omitted("cache_control"),
                sent("messages.0.content.0.cache_control", {"type": "ephemeral"}),
            ),
        ),
        "n": Entry({"n": 2}, every(refused("n"))),
        "logprobs": Entry(
            {"logprobs": True},
            per(sent("include", ["message.output_text.logprobs"]), sent("logprobs", True), refused("logprobs")),
        ),
        "top_logprobs": Entry(
            {"logprobs": True, "top_logprobs": 3},
            per(sent("top_logprobs", 3), sent("top_logprobs", 3), refused("top_logprobs")),
        ),
        "store": Entry({"store": True}, every(refused("store"))),
        "stream_options": Entry(
            {"stream": True, "stream_options": {"include_usage": True}},
            every(check("the stream ends with the usage", ends_with_usage)),
            stream=True,
        ),
        "user": Entry({"user": "customer-42"}, identity("user")),
        "safety_identifier": Entry({"safety_identifier": "customer-42"}, identity("safety_identifier")),
        "metadata": Entry({"metadata": {"order": "A-17"}}, every(row("metadata", {"order": "A-17"}))),
        "prompt_cache_key": Entry(
            {"prompt_cache_key": "k1"},
            per(
                sent("prompt_cache_key", "k1"),
                sticky_key("prompt_cache_key"),
                sticky_key("prompt_cache_key"),
            ),
        ),
        "service_tier": Entry(
            {"service_tier": "flex"},
            per(
                sent("service_tier", "flex"),
                kept_or_refused("service_tier", "flex"),
                kept_or_refused("service_tier", "flex"),
            ),
        ),
        "modalities": Entry({"modalities": ["text", "image"]}, every(refused("modalities"))),
        "image_config": Entry({"image_config": {"aspect_ratio": "1:1"}}, every(refused("image_config"))),
        "usage": Entry(
            {"usage": {"include": True}},
            every(check("usage with cost", lambda s: s.status == 200 and s.answer["usage"]["cost"] > 0)),
        ),
    }


CLAUDE_SEARCH = {"type": "web_search_20250305", "name": "web_search"}


def _messages() -> dict[str, Entry]:
    return {
        **_gateway_members(CLAUDE_SEARCH),
        "stream": Entry({"stream": True}, every(sent("stream", True)), stream=True),
        "model": Entry({}, every(lambda f: sent("model", UPSTREAM[f]))),
        "max_tokens": Entry({"max_tokens": 33}, MAX_33),
        "messages": Entry(
            {"messages": [{"role": "user", "content": "Ping-7"}]},
            per(carries("input", "Ping-7"), carries("messages", "Ping-7"), carries("messages", "Ping-7")),
        ),
        "system": Entry({"system": "Be brief."}, every(mentions("Be brief."))),
        "tools": Entry({"tools": [CLAUDE_TOOL]}, every(carries("tools", "lookup"))),
        "tool_choice": Entry(
            {"tools": [CLAUDE_TOOL], "tool_choice": {"type": "any"}},
            per(sent("tool_choice", "required"), sent("tool_choice", "required"), sent("tool_choice.type", "any")),
        ),
        "thinking": Entry({"thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096}, REASONING),
        "output_config": Entry(
            {"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}},
            {**JSON_SCHEMA_EFFECTS, CLAUDE: sent("output_config.format.schema", SCHEMA)},
        ),
        "output_format": Entry({"output_format": {"type": "json_schema", "schema": SCHEMA}}, JSON_SCHEMA_EFFECTS),
        "stop_sequences": Entry(
            {"stop_sequences": ["END"]}, per(omitted("stop"), sent("stop", ["END"]), sent("stop_sequences", ["END"]))
        ),
        "temperature": Entry({"temperature": 0.3}, sampling("temperature", 0.3, FORMATS)),
        "top_p": Entry({"top_p": 0.4}, sampling("top_p", 0.4, FORMATS)),
        "top_k": Entry({"top_k": 7}, sampling("top_k", 7, (CHAT, CLAUDE))),
        "cache_control": Entry(
            {"cache_control": {"type": "ephemeral"}},
            per(
                omitted("cache_control"),
                omitted("cache_control"),
                sent("messages.0.content.0.cache_control", {"type": "ephemeral"}),
            ),
        ),
        "metadata": Entry({"metadata": {"user_id": "customer-42"}}, identity("metadata")),
        "service_tier": Entry({"service_tier": "standard_only"}, every(refused("service_tier"))),
        "speed": Entry(
            {"speed": "fast"},
            per(sent("service_tier", "priority"), sent("service_tier", "priority"), sent("speed", "fast")),
        ),
        "context_management": Entry(
            {"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}},
            per(
                check("applied by the gateway", lambda s: s.status == 200 and "context_management" not in s.last),
                check("applied by the gateway", lambda s: s.status == 200 and "context_management" not in s.last),
                sent("context_management", {"edits": [{"type": "clear_tool_uses_20250919"}]}),
            ),
        ),
    }


MATRIX: dict[tuple[str, str], Entry] = {
    (ingress, member): entry
    for ingress, entries in (("responses", _responses()), ("chat-completions", _chat()), ("messages", _messages()))
    for member, entry in entries.items()
}
