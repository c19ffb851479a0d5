"""The upstream call (inference.providers.http over the process's aiohttp session) against loopback servers that
write the exact bytes of each case: what is sent (head, no User-Agent, URL credentials, percent-encoding),
keep-alive reuse, bodies by length, chunked and delimited by the end of the connection, gzip and deflate with
the size limit holding on compressed bodies, 1xx answers, TLS verified against the trusted CAs, the connect
limit, header injection, and every way an answer can break off, as post_json and post_sse report them."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import gzip
import ipaddress
import socket
import ssl
import struct
import zlib

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.test import override_settings

from inference.providers import upstream
from inference.providers.base import ProviderError, ProviderErrorKind, Timeouts, UpstreamRequest
from inference.providers.http import close_session, post_json, post_sse
from tests.fakes.raw_upstream import Server, fixed, ok, sse_answer

JSON = {"Content-Type": "application/json"}


@pytest.fixture(autouse=True)
async def _fresh_session():
    await close_session()  # this test's event loop gets a session of its own
    yield
    await close_session()


async def call(url: str, headers=None, timeouts: Timeouts | None = None):
    return await post_json(UpstreamRequest(url, headers or JSON, {}), timeouts or Timeouts(), "sk-secret")


async def failure(url: str, headers=None, timeouts: Timeouts | None = None) -> ProviderError:
    with pytest.raises(ProviderError) as caught:
        await call(url, headers, timeouts)
    return caught.value


async def test_a_keep_alive_connection_carries_the_next_request():
    async with Server(fixed(ok(b'{"a":1}'))) as server:
        for _ in range(3):
            assert await call(server.url) == {"a": 1}
        assert server.connections == 1
        request = server.requests[0]
        assert request.startswith(b"POST /v1/echo?x=1 HTTP/1.1\r\n")
        assert b"\r\nHost: 127.0.0.1:%d\r\n" % server.port in request
        assert b"\r\nAccept: */*\r\n" in request and b"\r\nAccept-Encoding: gzip, deflate\r\n" in request
        assert b"\r\nContent-Length: 2\r\n" in request and b"user-agent" not in request.lower()
        assert request.endswith(b"\r\n\r\n{}")


async def test_an_answer_with_connection_close_is_not_reused():
    async with Server(fixed(ok(b"{}", b"Connection: close\r\n"), keep=False)) as server:
        await call(server.url)
        await call(server.url)
        assert server.connections == 2


async def test_chunked_and_connection_delimited_bodies():
    chunked = b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n5\r\n":12}\r\n0\r\n\r\n'
    delimited = b'HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{"until": "the end"}'
    async with Server(fixed(chunked)) as server:
        assert await call(server.url) == {"a": 12}
        assert await call(server.url) == {"a": 12}
        assert server.connections == 1
    async with Server(fixed(delimited, keep=False)) as server:
        assert await call(server.url) == {"until": "the end"}


@pytest.mark.parametrize(
    "encoding, compress",
    [
        ("gzip", gzip.compress),
        ("gzip", lambda data: gzip.compress(data[:9]) + gzip.compress(data[9:])),  # two gzip members
        ("deflate", zlib.compress),  # zlib-wrapped, as the RFC says
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send it
    ],
    ids=["gzip", "gzip-members", "deflate", "raw-deflate"],
)
async def test_compressed_answers_are_decompressed(encoding, compress):
    body = b'{"text": "' + b"hello " * 2000 + b'"}'
    answer = ok(compress(body), b"Content-Encoding: %s\r\n" % encoding.encode())
    async with Server(fixed(answer)) as server:
        assert await call(server.url) == {"text": "hello " * 2000}


async def test_raw_deflate_arriving_a_byte_at_a_time():
    body = b'{"text": "' + b"raw deflate " * 50 + b'"}'
    raw = zlib.compress(body)[2:-4]

    async def trickle(request, writer, index):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Encoding: deflate\r\nContent-Length: %d\r\n\r\n" % len(raw))
        for byte in raw:
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0)
        return True

    async with Server(trickle) as server:
        assert await call(server.url) == {"text": "raw deflate " * 50}


async def test_a_compressed_bomb_is_refused_at_the_size_limit_without_inflating_it():
    bomb = gzip.compress(b"\0" * (200 << 20))  # 200 MB of zeros in about 200 KB
    assert len(bomb) < 300_000
    async with Server(fixed(ok(bomb, b"Content-Encoding: gzip\r\n"))) as server:
        with override_settings(GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES=100_000):
            started = asyncio.get_running_loop().time()
            error = await failure(server.url)
            assert asyncio.get_running_loop().time() - started < 1  # not 200 MB inflated first
        assert "upstream response larger than 100000 bytes" in error.message and error.maybe_billed
        # a compressed body itself past the limit (it would inflate to little) is refused as well
        small = gzip.compress(b'{"a": "' + bytes(range(48, 58)) * 5000 + b'"}', compresslevel=0)
        async with Server(fixed(ok(small, b"Content-Encoding: gzip\r\n"))) as second:
            with override_settings(GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES=40_000):
                assert "larger than 40000 bytes" in (await failure(second.url)).message


@pytest.mark.parametrize(
    "answer, problem",
    [
        (ok(zlib.compress(b"{}") + b"junk", b"Content-Encoding: deflate\r\n"), "cut short"),
        (ok(b"BZh9...", b"Content-Encoding: br\r\n"), "content-encoding"),
        (ok(b"not gzip at all", b"Content-Encoding: gzip\r\n"), "cut short"),
    ],
    ids=["data-after-deflate", "not-asked-for", "not-gzip"],
)
async def test_a_compressed_body_that_cannot_be_decoded_is_a_server_failure(answer, problem):
    async with Server(fixed(answer)) as server:
        error = await failure(server.url)
        assert error.kind == ProviderErrorKind.SERVER and problem in error.message.lower()


async def test_an_early_hints_answer_is_skipped():
    answer = b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n" + ok(b'{"final":true}')
    async with Server(fixed(answer)) as server:
        for _ in range(2):  # and the connection stays usable
            assert await call(server.url) == {"final": True}
        assert server.connections == 1


@pytest.mark.parametrize(
    "name, value",
    [("X-Note", "a\r\nX-Injected: 1"), ("X-Note", "a\nb"), ("X-No\x00te", "a"), ("X-A", "a\x7fb"), ("X-A", "a\x00b")],
)
async def test_a_header_with_a_control_character_is_refused_before_anything_is_sent(name, value):
    async with Server(fixed(ok(b"{}"))) as server:
        error = await failure(server.url, {name: value})
        assert "invalid upstream request" in error.message and not error.maybe_billed
        await asyncio.sleep(0.05)
        assert server.requests == []


async def test_a_connect_that_does_not_finish_in_time_is_a_timeout_not_billed():
    async def silent(reader, writer):  # accepts the TCP connection, never answers the TLS handshake
        await asyncio.sleep(10)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    started = asyncio.get_running_loop().time()
    try:
        error = await failure(f"https://127.0.0.1:{port}/v1", timeouts=Timeouts(connect=0.3))
        assert error.kind == ProviderErrorKind.TIMEOUT and not error.maybe_billed  # nothing was sent
        assert asyncio.get_running_loop().time() - started < 2
    finally:
        server.close()


async def test_a_refused_connection_is_a_connect_failure_not_billed():
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    error = await failure(f"http://127.0.0.1:{port}/v1")
    assert "cannot connect to upstream" in error.message and not error.maybe_billed


def _certificate() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    pem_key = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), pem_key


def tls_server_context(tmp_path) -> tuple[ssl.SSLContext, str]:
    """(the server's TLS context, the path of its self-signed certificate)."""
    cert, key = _certificate()
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    return server_tls, str(tmp_path / "cert.pem")


async def test_tls_with_a_trusted_certificate_works_and_an_untrusted_one_is_refused(tmp_path, monkeypatch):
    server_tls, cert_file = tls_server_context(tmp_path)
    async with Server(fixed(ok(b'{"tls":true}')), tls=server_tls) as server:
        error = await failure(server.url)  # the system's CAs: the self-signed certificate is not trusted
        assert "cannot connect to upstream" in error.message and "certificate verify failed" in error.message
        monkeypatch.setenv("SSL_CERT_FILE", cert_file)  # read when the session is made
        await close_session()
        assert await call(server.url) == {"tls": True}


async def test_a_body_cut_short_and_a_connection_closed_before_the_answer():
    async def cut(request, writer, index):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)
        return False

    async def closed(request, writer, index):
        return False

    async with Server(cut) as server:
        error = await failure(server.url)
        assert "upstream response cut short" in error.message and error.maybe_billed  # a 2xx answer had begun
    async with Server(closed) as server:
        error = await failure(server.url)
        assert "upstream connection failed" in error.message and not error.maybe_billed
    async with Server(fixed(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")) as server:
        error = await failure(server.url)
        assert "upstream connection failed" in error.message and not error.maybe_billed
    cut_chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"
    async with Server(fixed(cut_chunked, keep=False)) as server:
        error = await failure(server.url)
        assert "upstream response cut short" in error.message and error.maybe_billed


@pytest.mark.parametrize("length", [b"10 ", b"10\t"])
async def test_a_body_cut_short_is_seen_whatever_the_whitespace_around_its_length(length):
    async with Server(fixed(b"HTTP/1.1 200 OK\r\nContent-Length: " + length + b"\r\n\r\n12345", keep=False)) as server:
        assert "cut short" in (await failure(server.url)).message


async def test_a_reset_inside_a_body_delimited_by_the_connection_is_a_server_failure_maybe_billed():
    """aiohttp reads a reset in a body without a length as its end; the parser then refuses the half answer."""

    async def reset(request, writer, index):
        writer.write(b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"choices":[{"text":"half an ans')
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
        writer.transport.abort()
        return False

    async with Server(reset) as server:
        error = await failure(server.url)
        assert error.kind == ProviderErrorKind.SERVER and error.maybe_billed
        assert "malformed upstream" in error.message or "cut short" in error.message


async def test_an_endless_head_is_cut_off():
    async def endless(request, writer, index):
        writer.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
        for _ in range(200):
            writer.write(b"a" * 4096)
            await writer.drain()
        return True

    async with Server(endless) as server:
        error = await failure(server.url)
        assert "upstream connection failed" in error.message and not error.maybe_billed


async def test_an_answer_nobody_asked_for_is_never_read_as_the_next_answer():
    async def twice(request, writer, index):
        writer.write(ok(b"{}") + (ok(b'{"extra":1}') if index == 0 else b""))
        return True

    async with Server(twice) as server:
        assert await call(server.url) == {}
        await asyncio.sleep(0.05)
        assert await call(server.url) == {}  # on a fresh connection, not the extra answer


async def test_the_wait_for_a_free_connection_is_bounded_by_the_connect_limit_and_not_billed(monkeypatch):
    async def slow(request, writer, index):
        await asyncio.sleep(1)
        writer.write(ok(b"{}"))
        return True

    monkeypatch.setattr(upstream.session, "CONNECTIONS", 1)
    await close_session()
    async with Server(slow) as server:
        busy = asyncio.ensure_future(call(server.url))
        await asyncio.sleep(0.05)
        started = asyncio.get_running_loop().time()
        error = await failure(server.url, timeouts=Timeouts(connect=0.2))
        assert error.kind == ProviderErrorKind.TIMEOUT and not error.maybe_billed
        assert asyncio.get_running_loop().time() - started < 0.8
        assert len(server.requests) == 1  # nothing of the second call was sent
        await busy


async def test_an_answer_before_the_whole_body_was_sent_is_read_and_its_connection_not_reused():
    async def early(reader, writer):
        await reader.readuntil(b"\r\n\r\n")  # the head; the 16 MB body is never read
        writer.write(b'HTTP/1.1 401 Unauthorized\r\nContent-Length: 17\r\n\r\n{"error": "key?"}')
        await writer.drain()
        await asyncio.sleep(2)
        writer.close()

    server = await asyncio.start_server(early, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        request = UpstreamRequest(f"http://127.0.0.1:{port}/v1", JSON, {"big": "x" * (16 << 20)})
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(post_json(request, Timeouts(), "sk"), 5)
        assert caught.value.kind == ProviderErrorKind.AUTH and caught.value.status == 401
    finally:
        server.close()


async def test_userinfo_is_sent_as_basic_credentials_and_the_path_is_percent_encoded():
    async with Server(fixed(ok(b"{}"))) as server:
        url = server.url.replace("http://", "http://us%40er:p%3Ass@").replace("/v1/echo", "/v1/ech\u00f6")
        await call(url)
        request = server.requests[0]
        assert request.startswith(b"POST /v1/ech%C3%B6?x=1 HTTP/1.1\r\n")
        assert b"\r\nAuthorization: Basic " + base64.b64encode(b"us@er:p:ss") + b"\r\n" in request
        await call(url, {"Authorization": "Bearer sk-own"})  # the request's own credentials win
        assert b"Basic" not in server.requests[1] and b"Authorization: Bearer sk-own" in server.requests[1]


async def read_until_done(url: str) -> list[str]:
    seen = []
    async with contextlib.aclosing(post_sse(UpstreamRequest(url, JSON, {}), Timeouts(), "sk")) as reads:
        async for events in reads:
            for event in events:
                seen.append(event.data)
                if event.data == "[DONE]":
                    return seen
    return seen


async def test_a_stream_read_to_its_end_leaves_its_connection_for_the_next_call():
    """The consumer stops at `[DONE]`; the stream's end came with it, so the connection is reused. One that
    sends more after `[DONE]` is closed: nothing of it reaches the next call."""
    async with Server(fixed(sse_answer(b'data: {"a":1}\n\n', b"data: [DONE]\n\n"))) as server:
        for _ in range(3):
            assert await read_until_done(server.url) == ['{"a":1}', "[DONE]"]
        assert server.connections == 1

    async def trailing(request, writer, index):
        writer.write(sse_answer(b"data: [DONE]\n\n", b'data: {"after":1}\n\n')[:-5])  # the end not sent yet
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"0\r\n\r\n")
        return True

    async with Server(trailing) as server:
        for _ in range(2):
            assert await read_until_done(server.url) == ["[DONE]"]
        assert server.connections == 2


async def test_a_stream_past_the_size_limit_is_refused():
    events = [b'data: {"n":%d}\n\n' % n for n in range(2000)]
    async with Server(fixed(sse_answer(*events, b"data: [DONE]\n\n"))) as server:
        with override_settings(GATEWAY_UPSTREAM_MAX_RESPONSE_BYTES=10_000), pytest.raises(ProviderError) as caught:
            await read_until_done(server.url)
        assert "upstream response larger than 10000 bytes" in caught.value.message and caught.value.maybe_billed
