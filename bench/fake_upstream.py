"""Fake OpenAI/Anthropic-compatible upstream for gateway benchmarks and checks.

Serves POST /v1/chat/completions, /v1/responses, /v1/messages, streaming or not.
Env: FAKE_DELAY_MS (time to first byte), FAKE_CHUNKS (stream chunks), FAKE_CHUNK_MS.
Scenarios by upstream model name: fail-500, fail-429, fail-529, slow-stream (100 ms between chunks),
hang (never answers). Every request is logged to stderr as one JSON line (path, model, auth header hash,
the request body) and a client disconnect during a stream is logged as {"event": "client_disconnected"}.
"""

import asyncio
import hashlib
import json
import os
import sys
import time

from aiohttp import web

DELAY = float(os.environ.get("FAKE_DELAY_MS", "0")) / 1000
CHUNKS = int(os.environ.get("FAKE_CHUNKS", "20"))
CHUNK_DELAY = float(os.environ.get("FAKE_CHUNK_MS", "0")) / 1000
WORD = "hello "
USAGE = {"prompt_tokens": 12, "completion_tokens": CHUNKS, "total_tokens": 12 + CHUNKS}


def chat_body(model):
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": WORD * CHUNKS}, "finish_reason": "stop"}],
        "usage": USAGE,
    }


LOG = os.environ.get("FAKE_LOG") == "1"


def log(**kw):
    if LOG:
        print(json.dumps(kw), file=sys.stderr, flush=True)


async def scenario(request, body):
    """Log the request and play a failure scenario chosen by the model name; None means answer normally."""
    model = body.get("model", "")
    auth = request.headers.get("Authorization") or request.headers.get("x-api-key") or ""
    log(
        event="request",
        path=request.path,
        model=model,
        stream=bool(body.get("stream")),
        auth=hashlib.sha256(auth.encode()).hexdigest()[:16],
        auth_tail=auth[-6:],
        body=body,
    )
    if model == "hang":
        await asyncio.sleep(3600)
    for code in (500, 429, 529):
        if model == f"fail-{code}":
            return web.json_response(
                {"error": {"message": f"fake failure {code}", "type": "server_error"}},
                status=code,
                headers={"Retry-After": "1"} if code == 429 else None,
            )
    return None


def chunk_delay(body):
    return 0.1 if body.get("model") == "slow-stream" else CHUNK_DELAY


async def chat(request):
    body = await request.json()
    model = body.get("model", "fake")
    failed = await scenario(request, body)
    if failed is not None:
        return failed
    if DELAY:
        await asyncio.sleep(DELAY)
    if not body.get("stream"):
        return web.json_response(chat_body(model))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": model}
    try:
        for i in range(CHUNKS):
            chunk = dict(
                base,
                choices=[
                    {
                        "index": 0,
                        "delta": ({"role": "assistant"} if i == 0 else {}) | {"content": WORD},
                        "finish_reason": None,
                    }
                ],
            )
            await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            if chunk_delay(body):
                await asyncio.sleep(chunk_delay(body))
    except (ConnectionResetError, asyncio.CancelledError):
        log(event="client_disconnected", path=request.path, chunks_sent=i)
        return resp
    last = dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}], usage=USAGE)
    await resp.write(b"data: " + json.dumps(last).encode() + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


def response_obj(model, status="completed"):
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "output": [
            {
                "type": "message",
                "id": "msg_fake",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": WORD * CHUNKS, "annotations": []}],
            }
        ],
        "usage": {
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": CHUNKS,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 12 + CHUNKS,
        },
    }


async def responses(request):
    body = await request.json()
    model = body.get("model", "fake")
    failed = await scenario(request, body)
    if failed is not None:
        return failed
    if DELAY:
        await asyncio.sleep(DELAY)
    if not body.get("stream"):
        return web.json_response(response_obj(model))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    seq = 0

    async def ev(d):
        nonlocal seq
        d["sequence_number"] = seq
        seq += 1
        await resp.write(b"event: " + d["type"].encode() + b"\ndata: " + json.dumps(d).encode() + b"\n\n")

    await ev({"type": "response.created", "response": response_obj(model, "in_progress") | {"output": []}})
    try:
        for i in range(CHUNKS):  # noqa: B007 (read in the except clause)
            await ev(
                {
                    "type": "response.output_text.delta",
                    "item_id": "msg_fake",
                    "output_index": 0,
                    "content_index": 0,
                    "delta": WORD,
                    "logprobs": [],
                }
            )
            if chunk_delay(body):
                await asyncio.sleep(chunk_delay(body))
    except (ConnectionResetError, asyncio.CancelledError):
        log(event="client_disconnected", path=request.path, chunks_sent=i)
        return resp
    await ev({"type": "response.completed", "response": response_obj(model)})
    await resp.write_eof()
    return resp


async def messages(request):
    body = await request.json()
    model = body.get("model", "fake")
    failed = await scenario(request, body)
    if failed is not None:
        return failed
    if DELAY:
        await asyncio.sleep(DELAY)
    msg = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": WORD * CHUNKS}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 12, "output_tokens": CHUNKS},
    }
    if not body.get("stream"):
        return web.json_response(msg)
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)

    async def ev(t, d):
        await resp.write(f"event: {t}\ndata: ".encode() + json.dumps(d | {"type": t}).encode() + b"\n\n")

    await ev("message_start", {"message": msg | {"content": [], "usage": {"input_tokens": 12, "output_tokens": 0}}})
    await ev("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}})
    try:
        for i in range(CHUNKS):  # noqa: B007 (read in the except clause)
            await ev("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": WORD}})
            if chunk_delay(body):
                await asyncio.sleep(chunk_delay(body))
    except (ConnectionResetError, asyncio.CancelledError):
        log(event="client_disconnected", path=request.path, chunks_sent=i)
        return resp
    await ev("content_block_stop", {"index": 0})
    await ev("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": CHUNKS}})
    await ev("message_stop", {})
    await resp.write_eof()
    return resp


async def models(request):
    return web.json_response({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})


app = web.Application()
app.add_routes(
    [
        web.post("/v1/chat/completions", chat),
        web.post("/v1/responses", responses),
        web.post("/v1/messages", messages),
        web.get("/v1/models", models),
    ]
)

if __name__ == "__main__":
    web.run_app(
        app, host="127.0.0.1", port=int(sys.argv[1]) if len(sys.argv) > 1 else 9100, access_log=None, print=None
    )
