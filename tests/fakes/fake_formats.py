"""Wire bodies of the fake upstream: one `Reply` rendered as OpenAI Responses, Chat Completions or Anthropic
Messages, as a JSON body or as a list of SSE frames. Used by tests/fakes/fake_upstream.py."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """What the fake model answers: text pieces (one stream chunk each) or one tool call, and usage."""

    pieces: list[str] = field(default_factory=list)
    tool_name: str | None = None
    tool_call_id: str = "call_fake_1"
    tool_arguments: list[str] = field(default_factory=list)  # argument JSON in stream pieces
    finish: str = "stop"  # stop | length | content_filter | tool_calls
    more_calls: list[tuple[str, str, str]] = field(default_factory=list)  # (call_id, name, arguments), Responses only
    fail_status: int | None = None  # a scripted failure: the format's error body with this HTTP status
    input_tokens: int = 12  # total prompt tokens, cached included
    cached_tokens: int = 4
    reasoning_tokens: int = 2
    billed_output: int | None = None  # output tokens reported instead of the pieces' count (size billing)
    omit_usage: bool = False  # answer without usage, as several OpenAI-compatible servers do
    reasoning: list[str] = field(default_factory=list)  # reasoning text pieces (the `reasoning` scenario)
    signature: str = "sig-fake"  # the Anthropic thinking block's signature
    redacted: str = ""  # Anthropic: a redacted_thinking block with this data after the thinking
    service_tier: str | None = None  # the tier the answer reports it was served at (Anthropic: "fast" = speed)
    images: list[str] = field(default_factory=list)  # image output URLs (Chat Completions `message.images`, JSON)
    encrypted_reasoning: bool = False  # the request's include asked for reasoning.encrypted_content (Responses)
    top_logprobs: int | None = None  # the request asked for log-probabilities: one entry per text piece

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    @property
    def arguments(self) -> str:
        return "".join(self.tool_arguments)

    @property
    def output_tokens(self) -> int:
        if self.billed_output is not None:
            return self.billed_output
        return len(self.pieces) + len(self.tool_arguments) + self.reasoning_tokens


def piece_logprobs(reply: Reply, index: int) -> list[dict[str, Any]]:
    """The log-probability entries of text piece `index` (`[]` when the request asked for none)."""
    if reply.top_logprobs is None:
        return []
    token = reply.pieces[index]
    alternatives = [{"token": f"alt{i}", "logprob": -1.0 - i, "bytes": None} for i in range(reply.top_logprobs)]
    entry = {"token": token, "logprob": -0.5 * index, "bytes": list(token.encode()), "top_logprobs": alternatives}
    return [entry]


def all_logprobs(reply: Reply) -> list[dict[str, Any]]:
    return [entry for index in range(len(reply.pieces)) for entry in piece_logprobs(reply, index)]


def sse(data: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    payload = data if isinstance(data, str) else json.dumps(data)
    return head + b"data: " + payload.encode() + b"\n\n"


# --- OpenAI Responses ---------------------------------------------------------------------------------------


def _responses_output(reply: Reply) -> list[dict[str, Any]]:
    if reply.tool_name:
        calls = [(reply.tool_call_id, reply.tool_name, reply.arguments), *reply.more_calls]
        return [
            {
                "type": "function_call",
                "id": f"fc_fake_{number}",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
            for number, (call_id, name, arguments) in enumerate(calls, 1)
        ]
    text = {"type": "output_text", "text": reply.text, "annotations": [], "logprobs": all_logprobs(reply)}
    message = {"type": "message", "id": "msg_fake_1", "role": "assistant", "status": "completed", "content": [text]}
    return [*_responses_reasoning(reply), message]


def _responses_reasoning(reply: Reply) -> list[dict[str, Any]]:
    if not reply.reasoning:
        return []
    summary = [{"type": "summary_text", "text": "".join(reply.reasoning)}]
    item = {"type": "reasoning", "id": "rs_fake_1", "summary": summary}
    return [item | {"encrypted_content": "enc-fake"} if reply.encrypted_reasoning else item]


def responses_json(model: str, reply: Reply, status: str | None = None) -> dict[str, Any]:
    incomplete = {"length": "max_output_tokens", "content_filter": "content_filter"}.get(reply.finish)
    return {
        "id": "resp_fake_1",
        "object": "response",
        "created_at": int(time.time()),
        "status": status or ("incomplete" if incomplete else "completed"),
        "incomplete_details": {"reason": incomplete} if incomplete else None,
        "model": model,
        "output": _responses_output(reply),
        "usage": None
        if reply.omit_usage
        else {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": reply.cached_tokens},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        },
    } | ({"service_tier": reply.service_tier} if reply.service_tier else {})


def responses_frames(model: str, reply: Reply) -> list[bytes]:
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": responses_json(model, reply, "in_progress") | {"output": []}},
        {"type": "response.in_progress", "response": responses_json(model, reply, "in_progress") | {"output": []}},
    ]
    item = _responses_output(reply)[-1]
    if reply.reasoning:
        reasoning = _responses_reasoning(reply)[0]
        added = {"type": "reasoning", "id": "rs_fake_1", "summary": []}
        events.append({"type": "response.output_item.added", "output_index": 0, "item": added})
    for piece in reply.reasoning:
        ref = {"item_id": "rs_fake_1", "output_index": 0, "summary_index": 0}
        events.append({"type": "response.reasoning_summary_text.delta", **ref, "delta": piece})
    if reply.reasoning:
        events.append({"type": "response.output_item.done", "output_index": 0, "item": reasoning})
    if reply.tool_name:
        for index, call in enumerate(_responses_output(reply)):
            pieces = reply.tool_arguments if index == 0 else [call["arguments"]]
            ref = {"item_id": call["id"], "output_index": index}
            events.append(
                {"type": "response.output_item.added", "output_index": index, "item": call | {"arguments": ""}}
            )
            for piece in pieces:
                events.append({"type": "response.function_call_arguments.delta", **ref, "delta": piece})
            events.append({"type": "response.function_call_arguments.done", **ref, "arguments": call["arguments"]})
            events.append({"type": "response.output_item.done", "output_index": index, "item": call})
    else:
        events.append({"type": "response.output_item.added", "output_index": 0, "item": item | {"content": []}})
        for index, piece in enumerate(reply.pieces):
            events.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_fake_1",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": piece,
                    "logprobs": piece_logprobs(reply, index),
                }
            )
        events.append(
            {
                "type": "response.output_text.done",
                "item_id": "msg_fake_1",
                "output_index": 0,
                "content_index": 0,
                "text": reply.text,
                "logprobs": all_logprobs(reply),
            }
        )
        events.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    final = responses_json(model, reply)
    events.append({"type": f"response.{final['status']}", "response": final})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return [sse(event, event["type"]) for event in events]


def responses_error_frames() -> list[bytes]:
    error = {"type": "error", "code": "server_error", "message": "fake upstream failed mid-stream", "param": None}
    failed = {
        "type": "response.failed",
        "response": {"id": "resp_fake_1", "status": "failed", "error": {"code": "server_error", "message": "failed"}},
    }
    return [sse(error, "error"), sse(failed, "response.failed")]


# --- OpenAI Chat Completions --------------------------------------------------------------------------------


def _chat_usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
    }


def chat_json(model: str, reply: Reply) -> dict[str, Any]:
    # A tool call comes with text only when the script gives both (a model that says something, then calls).
    message: dict[str, Any] = {"role": "assistant", "content": (reply.text or None) if reply.tool_name else reply.text}
    if reply.reasoning:
        message["reasoning"] = "".join(reply.reasoning)
    if reply.images:
        message["images"] = [{"type": "image_url", "image_url": {"url": url}} for url in reply.images]
    if reply.tool_name:
        message["tool_calls"] = [
            {
                "id": reply.tool_call_id,
                "type": "function",
                "function": {"name": reply.tool_name, "arguments": reply.arguments},
            }
        ]
    return (
        {
            "id": "chatcmpl-fake-1",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish, "logprobs": None}],
        }
        | ({} if reply.omit_usage else {"usage": _chat_usage(reply)})
        | _chat_tier(reply)
    )


def chat_logprobs(text: str, top: int) -> dict[str, Any]:
    """`choice.logprobs` of a chat answer asked with `logprobs: true`: each word with `top` alternatives."""
    entries = []
    for index, token in enumerate(text.split()):
        alternatives = [{"token": f"alt{i}", "logprob": -1.0 - i, "bytes": None} for i in range(top)]
        entries.append(
            {"token": token, "logprob": -0.1 * index, "bytes": list(token.encode()), "top_logprobs": alternatives}
        )
    return {"content": entries, "refusal": None}


def _chat_tier(reply: Reply) -> dict[str, Any]:
    return {"service_tier": reply.service_tier} if reply.service_tier else {}


def chat_frames(model: str, reply: Reply, include_usage: bool) -> list[bytes]:
    base = {"id": "chatcmpl-fake-1", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    base |= _chat_tier(reply)

    def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        if logprobs is not None:
            choice["logprobs"] = {"content": logprobs, "refusal": None}
        return sse(base | {"choices": [choice]})

    def text_chunk(index: int) -> bytes:
        logprobs = piece_logprobs(reply, index) if reply.top_logprobs is not None else None
        return chunk({"content": reply.pieces[index]}, logprobs=logprobs)

    frames = [chunk({"role": "assistant", "content": ""})]
    frames.extend(chunk({"reasoning": piece}) for piece in reply.reasoning)
    if reply.tool_name:
        frames.extend(chunk({"content": piece}) for piece in reply.pieces)
        for number, piece in enumerate(reply.tool_arguments):
            call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
            if number == 0:
                call = {
                    "index": 0,
                    "id": reply.tool_call_id,
                    "type": "function",
                    "function": {"name": reply.tool_name, "arguments": piece},
                }
            frames.append(chunk({"tool_calls": [call]}))
    else:
        frames.extend(text_chunk(index) for index in range(len(reply.pieces)))
    frames.append(chunk({}, reply.finish))
    if include_usage and not reply.omit_usage:
        frames.append(sse(base | {"choices": [], "usage": _chat_usage(reply)}))
    frames.append(sse("[DONE]"))
    return frames


def chat_error_frames() -> list[bytes]:
    return [sse({"error": {"message": "fake upstream failed mid-stream", "type": "server_error", "code": 500}})]


# --- Anthropic Messages -------------------------------------------------------------------------------------

_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "content_filter": "refusal"}


def _anthropic_usage(reply: Reply, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens - reply.cached_tokens,
        "cache_read_input_tokens": reply.cached_tokens,
        "cache_creation_input_tokens": 0,
        "output_tokens": output_tokens,
    } | _anthropic_tier(reply)


def _anthropic_tier(reply: Reply) -> dict[str, Any]:
    if reply.service_tier == "fast":
        return {"service_tier": "standard", "speed": "fast"}
    return {"service_tier": reply.service_tier} if reply.service_tier else {}


def _anthropic_block(reply: Reply) -> dict[str, Any]:
    if reply.tool_name:
        return {
            "type": "tool_use",
            "id": reply.tool_call_id,
            "name": reply.tool_name,
            "input": json.loads(reply.arguments or "{}"),
        }
    return {"type": "text", "text": reply.text}


def _anthropic_thinking(reply: Reply) -> list[dict[str, Any]]:
    blocks = []
    if reply.reasoning:
        blocks.append({"type": "thinking", "thinking": "".join(reply.reasoning), "signature": reply.signature})
    if reply.redacted:
        blocks.append({"type": "redacted_thinking", "data": reply.redacted})
    return blocks


def messages_json(model: str, reply: Reply) -> dict[str, Any]:
    return {
        "id": "msg_fake_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [*_anthropic_thinking(reply), _anthropic_block(reply)],
        "stop_reason": _ANTHROPIC_STOP[reply.finish],
        "stop_sequence": None,
    } | ({} if reply.omit_usage else {"usage": _anthropic_usage(reply, reply.output_tokens)})


def messages_frames(model: str, reply: Reply) -> list[bytes]:
    start = messages_json(model, reply) | {"content": [], "stop_reason": None}
    if not reply.omit_usage:
        start["usage"] = _anthropic_usage(reply, 1)
    frames = [sse({"type": "message_start", "message": start}, "message_start"), sse({"type": "ping"}, "ping")]
    if reply.tool_name:
        block = _anthropic_block(reply) | {"input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in reply.tool_arguments]
    else:
        block = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in reply.pieces]
    blocks = [(block, deltas)]
    if reply.redacted:
        blocks.insert(0, ({"type": "redacted_thinking", "data": reply.redacted}, []))
    if reply.reasoning:
        thinking = [{"type": "thinking_delta", "thinking": piece} for piece in reply.reasoning]
        thinking.append({"type": "signature_delta", "signature": reply.signature})
        blocks.insert(0, ({"type": "thinking", "thinking": "", "signature": ""}, thinking))
    for index, (block, deltas) in enumerate(blocks):
        start = {"type": "content_block_start", "index": index, "content_block": block}
        frames.append(sse(start, "content_block_start"))
        for delta in deltas:
            frames.append(sse({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"))
        frames.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": _ANTHROPIC_STOP[reply.finish], "stop_sequence": None},
    } | ({} if reply.omit_usage else {"usage": {"output_tokens": reply.output_tokens}})
    frames.append(sse(message_delta, "message_delta"))
    frames.append(sse({"type": "message_stop"}, "message_stop"))
    return frames


def messages_error_frames() -> list[bytes]:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return [sse(error, "error")]


# --- error bodies -------------------------------------------------------------------------------------------


def error_body(path: str, status: int, key: str = "") -> dict[str, Any]:
    """The format's error body. Like real providers, a 401 quotes the key it refused; a 503 says overloaded."""
    message = f"fake failure {status}"
    if status == 401:
        message = f"Incorrect API key provided: {key}"
    elif status == 503:
        message = "The server is overloaded, try again later"
    if path.endswith("/messages"):
        kinds = {
            400: "invalid_request_error",
            401: "authentication_error",
            403: "permission_error",
            404: "not_found_error",
            413: "request_too_large",
            429: "rate_limit_error",
            529: "overloaded_error",
        }
        return {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}
    kinds = {429: "rate_limit_exceeded", 401: "invalid_api_key", 503: "overloaded"}
    kind = kinds.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "code": kind, "param": None}}
