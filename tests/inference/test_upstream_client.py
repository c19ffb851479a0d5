"""The data plane's HTTP/1.1 client (inference.providers.upstream) against loopback servers that write
the exact bytes of each case: keep-alive reuse and its limits, bodies by length, chunked and delimited by the
end of the connection, gzip and deflate with the decompression bounded, 1xx answers, TLS with verification,
the connect limit, header injection, and every way an answer can break off (as post_json reports them)."""

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

from inference.providers.base import ProviderError, Timeouts, UpstreamRequest
from inference.providers.http import close_session, post_json, post_sse
from inference.providers.upstream import (
    ConnectFailed,
    ConnectTimeout,
    InvalidRequest,
    ResponseCutShort,
    UpstreamDisconnected,
    UpstreamPool,
)
from inference.providers.upstream import response as upstream_response


class Server:
    """A loopback TCP server; `answer(request_bytes, writer, index)` writes each answer. Records the requests
    and how many connections were opened."""

    def __init__(self, answer, tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.tls = tls
        self.requests: list[bytes] = []
        self.connections = 0
        self.open_now = 0
        self.most_open = 0

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/v1/echo?x=1"
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                keep = await self.answer(head + body, writer, len(self.requests) - 1)
                await writer.drain()
                if keep is False:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open_now -= 1
            writer.close()


def ok(body: bytes, extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        len(body),
        extra,
        body,
    )


def fixed(data: bytes, keep=True):
    async def answer(request, writer, index):
        writer.write(data)
        return keep

    return answer


async def call(pool: UpstreamPool, url: str, headers=None, body=b"{}", limit=0) -> tuple[int, bytes, object]:
    response = await pool.post(url, headers or {"Content-Type": "application/json"}, body, 5, limit)
    data = await response.read_all(lambda: ValueError("too large"))
    response.release()
    return response.status, data, response.headers


@pytest.fixture
async def pool():
    pool = UpstreamPool(asyncio.get_running_loop())
    yield pool
    pool.close()


async def test_a_keep_alive_connection_carries_the_next_request(pool):
    async with Server(fixed(ok(b'{"a":1}'))) as server:
        for _ in range(3):
            status, data, headers = await call(pool, server.url)
            assert (status, data, headers.get("CONTENT-TYPE")) == (200, b'{"a":1}', "application/json")
        assert server.connections == 1 and pool.connections_open() == 1
        request = server.requests[0]
        assert request.startswith(b"POST /v1/echo?x=1 HTTP/1.1\r\n")
        assert b"\r\nHost: 127.0.0.1:%d\r\n" % server.port in request
        assert b"\r\nAccept: */*\r\n" in request and b"\r\nAccept-Encoding: gzip, deflate\r\n" in request
        assert b"\r\nContent-Length: 2\r\n" in request and b"user-agent" not in request.lower()


async def test_an_answer_with_connection_close_is_not_reused(pool):
    async with Server(fixed(ok(b"{}", b"Connection: close\r\n"), keep=False)) as server:
        await call(pool, server.url)
        await call(pool, server.url)
        assert server.connections == 2


async def test_chunked_and_connection_delimited_bodies():
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
    delimited = b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"
    pool = UpstreamPool(asyncio.get_running_loop())
    try:
        async with Server(fixed(chunked)) as server:
            assert (await call(pool, server.url))[1] == b"abcdefg"
            assert (await call(pool, server.url))[1] == b"abcdefg"
            assert server.connections == 1
        async with Server(fixed(delimited, keep=False)) as server:
            assert (await call(pool, server.url))[1] == b"until the end"
    finally:
        pool.close()


@pytest.mark.parametrize(
    "encoding, compress",
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),  # zlib-wrapped, as the RFC says
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send it
    ],
)
async def test_compressed_answers_are_decompressed(pool, encoding, compress):
    body = b'{"text": "' + b"hello " * 2000 + b'"}'
    answer = ok(compress(body), b"Content-Encoding: %s\r\n" % encoding.encode())
    async with Server(fixed(answer)) as server:
        assert (await call(pool, server.url))[1] == body


async def test_a_compressed_bomb_is_decompressed_no_further_than_the_bound(pool):
    bomb = gzip.compress(b"\0" * (50 << 20))  # 50 MB of zeros in about 50 KB
    assert len(bomb) < 100_000
    async with Server(fixed(ok(bomb, b"Content-Encoding: gzip\r\n"))) as server:
        response = await pool.post(server.url, {}, b"{}", 5, 100_000)
        received = 0
        with pytest.raises(ValueError, match="too large"):
            while chunk := await response.read_any():
                received += len(chunk)
                assert received <= 100_001  # never inflated further than the bound
                if received > response.limit:
                    raise ValueError("too large")
        response.close()
        # a compressed body itself past the bound is refused before it is inflated, as the caller's too_large
        response = await pool.post(server.url, {}, b"{}", 5, 1000, lambda: ValueError("too large, compressed"))
        with pytest.raises(ValueError, match="too large, compressed"):
            await response.read_all()
        response.close()


@pytest.mark.parametrize(
    "answer, problem",
    [
        (ok(gzip.compress(b'{"a": 1}' * 500)[:-20], b"Content-Encoding: gzip\r\n"), "ended before its end"),
        (ok(zlib.compress(b"{}") + b"junk", b"Content-Encoding: deflate\r\n"), "after the end"),
        (ok(b"BZh9...", b"Content-Encoding: br\r\n"), r"did not ask for \(br\)"),
    ],
)
async def test_a_compressed_body_that_is_cut_or_in_another_coding_is_refused(pool, answer, problem):
    async with Server(fixed(answer)) as server:
        response = await pool.post(server.url, {}, b"{}", 5)
        with pytest.raises(ResponseCutShort, match=problem):
            await response.read_all()
        response.close()


async def test_gzip_members_and_an_empty_compressed_body(pool):
    two = gzip.compress(b'{"a": ') + gzip.compress(b'"two members"}')
    async with Server(fixed(ok(two, b"Content-Encoding: gzip, identity\r\n"))) as server:
        assert (await call(pool, server.url))[1] == b'{"a": "two members"}'
    async with Server(fixed(ok(b"", b"Content-Encoding: gzip\r\n"))) as server:
        assert (await call(pool, server.url))[1] == b""


async def test_raw_deflate_arriving_a_byte_at_a_time(pool):
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
        assert (await call(pool, server.url))[1] == body


async def test_an_early_hints_answer_is_skipped(pool):
    answer = b"HTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n" + ok(b'{"final":true}')
    async with Server(fixed(answer)) as server:
        for _ in range(2):  # and the connection stays usable
            status, data, _ = await call(pool, server.url)
            assert (status, data) == (200, b'{"final":true}')
        assert server.connections == 1


@pytest.mark.parametrize("name, value", [("X-Note", "a\r\nX-Injected: 1"), ("X-Note", "a\nb"), ("X-No\x00te", "a")])
async def test_a_header_with_a_control_character_is_refused_before_anything_is_sent(pool, name, value):
    async with Server(fixed(ok(b"{}"))) as server:
        with pytest.raises(InvalidRequest):
            await pool.post(server.url, {name: value}, b"{}", 5)
        await asyncio.sleep(0.05)
        assert server.connections == 0


async def test_a_connect_that_does_not_finish_in_time_is_a_connect_timeout(pool):
    async def silent(reader, writer):  # accepts the TCP connection, never answers the TLS handshake
        await asyncio.sleep(10)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    started = asyncio.get_running_loop().time()
    try:
        with pytest.raises(ConnectTimeout):
            await pool.post(f"https://127.0.0.1:{port}/v1", {}, b"{}", 0.3)
        assert asyncio.get_running_loop().time() - started < 2
        request = UpstreamRequest(f"https://127.0.0.1:{port}/v1", {}, {})
        with pytest.raises(ProviderError) as failed:
            await post_json(request, Timeouts(connect=0.3), "sk")
        assert failed.value.kind.value == "timeout" and not failed.value.maybe_billed  # nothing was sent
    finally:
        server.close()


async def test_a_refused_connection_is_a_connect_failure(pool):
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    with pytest.raises(ConnectFailed):
        await pool.post(f"http://127.0.0.1:{port}/v1", {}, b"{}", 5)
    with pytest.raises(ProviderError, match="cannot connect to upstream") as failed:
        await post_json(UpstreamRequest(f"http://127.0.0.1:{port}/v1", {}, {}), Timeouts(), "sk")
    assert not failed.value.maybe_billed


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


async def test_tls_with_a_trusted_certificate_works_and_an_untrusted_one_is_refused(tmp_path):
    cert, key = _certificate()
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    trusting = ssl.create_default_context(cadata=cert.decode())
    loop = asyncio.get_running_loop()
    async with Server(fixed(ok(b'{"tls":true}')), tls=server_tls) as server:
        pool = UpstreamPool(loop, ssl_context=trusting)
        try:
            assert (await call(pool, server.url))[1] == b'{"tls":true}'
        finally:
            pool.close()
        default = UpstreamPool(loop)  # the system's CAs: the self-signed certificate is not trusted
        try:
            with pytest.raises(ConnectFailed, match="certificate verify failed"):
                await default.post(server.url, {}, b"{}", 5)
        finally:
            default.close()


async def test_a_body_cut_short_and_a_connection_closed_before_the_answer():
    async def cut(request, writer, index):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + b"x" * 10)
        return False

    async def closed(request, writer, index):
        return False

    async def garbage(request, writer, index):
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        return True

    async with Server(cut) as server:
        request = UpstreamRequest(server.url, {}, {})
        with pytest.raises(ProviderError, match="upstream response cut short") as failed:
            await post_json(request, Timeouts(), "sk")
        assert failed.value.maybe_billed  # a 2xx answer had begun: the provider answered
    async with Server(closed) as server:
        with pytest.raises(ProviderError, match="upstream connection failed") as failed:
            await post_json(UpstreamRequest(server.url, {}, {}), Timeouts(), "sk")
        assert not failed.value.maybe_billed
        pool = UpstreamPool(asyncio.get_running_loop())
        with pytest.raises(UpstreamDisconnected):
            await pool.post(server.url, {}, b"{}", 5)
        pool.close()
    async with Server(garbage) as server:
        pool = UpstreamPool(asyncio.get_running_loop())
        with pytest.raises(UpstreamDisconnected, match="invalid HTTP answer"):
            await pool.post(server.url, {}, b"{}", 5)
        pool.close()
    cut_chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"
    async with Server(fixed(cut_chunked, keep=False)) as server:
        pool = UpstreamPool(asyncio.get_running_loop())
        response = await pool.post(server.url, {}, b"{}", 5)
        with pytest.raises(ResponseCutShort):
            await response.read_all()
        pool.close()


async def test_an_endless_head_is_cut_off(pool):
    async def endless(request, writer, index):
        writer.write(b"HTTP/1.1 200 OK\r\nX-Endless: ")
        for _ in range(200):
            writer.write(b"a" * 4096)
            await writer.drain()
        return True

    async with Server(endless) as server:
        with pytest.raises(UpstreamDisconnected, match="head is larger than"):
            await pool.post(server.url, {}, b"{}", 5)
        assert pool.connections_open() == 0


async def test_at_most_limit_connections_are_open_and_the_others_wait():
    async def slow(request, writer, index):
        await asyncio.sleep(0.1)
        writer.write(ok(b"{}"))
        return True

    pool = UpstreamPool(asyncio.get_running_loop(), limit=2)
    try:
        async with Server(slow) as server:
            results = await asyncio.gather(*(call(pool, server.url) for _ in range(6)))
            assert [status for status, _, _ in results] == [200] * 6
            assert server.most_open == 2 and server.connections == 2
    finally:
        pool.close()


async def test_idle_connections_are_closed_after_the_keep_alive_time():
    pool = UpstreamPool(asyncio.get_running_loop(), keepalive=0.2)
    try:
        async with Server(fixed(ok(b"{}"))) as server:
            await call(pool, server.url)
            assert pool.connections_open() == 1
            await asyncio.sleep(0.5)
            assert pool.connections_open() == 0
            await call(pool, server.url)
            assert server.connections == 2
    finally:
        pool.close()


async def test_an_answer_nobody_asked_for_drops_the_connection(pool):
    async def twice(request, writer, index):
        writer.write(ok(b"{}") + (ok(b'{"extra":1}') if index == 0 else b""))
        return True

    async with Server(twice) as server:
        assert (await call(pool, server.url))[1] == b"{}"
        await asyncio.sleep(0.05)
        assert (await call(pool, server.url))[1] == b"{}"  # on a fresh connection, not the extra answer
        assert server.connections == 2


async def test_a_slow_reader_pauses_the_connection(pool, monkeypatch):
    monkeypatch.setattr(upstream_response, "PAUSE_BYTES", 64 * 1024)
    big = b"y" * (4 << 20)

    async def large(request, writer, index):
        writer.write(ok(big))
        return True

    async with Server(large) as server:
        response = await pool.post(server.url, {}, b"{}", 5)
        await asyncio.sleep(0.3)  # the upstream writes as fast as it can; nobody reads
        assert response._paused and response._buffered < 4 << 20
        data = await response.read_all()
        assert data == big
        response.release()
        assert pool.connections_open() == 1  # read to its end: kept for the next request


def sse_answer(*events: bytes) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + body


async def read_until_done(url: str) -> list[str]:
    seen = []
    async with contextlib.aclosing(post_sse(UpstreamRequest(url, {}, {}), Timeouts(), "sk")) as reads:
        async for events in reads:
            for event in events:
                seen.append(event.data)
                if event.data == "[DONE]":
                    return seen
    return seen


async def test_a_stream_read_to_its_end_leaves_its_connection_for_the_next_call():
    """The consumer stops at `[DONE]`; the stream's end came with it, so the connection is reused. One that
    sends more after `[DONE]` is closed: nothing of it reaches the next call."""
    await close_session()
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
    await close_session()


async def test_a_failed_connect_hands_its_slot_to_a_waiting_call():
    async def silent(reader, writer):  # a TLS handshake that never finishes
        await asyncio.sleep(10)

    hanging = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = hanging.sockets[0].getsockname()[1]
    pool = UpstreamPool(asyncio.get_running_loop(), limit=1)
    try:
        async with Server(fixed(ok(b'{"b":1}'))) as server:
            first = asyncio.ensure_future(pool.post(f"https://127.0.0.1:{port}/v1", {}, b"{}", 0.3))
            await asyncio.sleep(0.05)
            second = asyncio.ensure_future(call(pool, server.url))  # waits for the only slot
            with pytest.raises(ConnectTimeout):
                await first
            assert (await asyncio.wait_for(second, 2))[1] == b'{"b":1}'
    finally:
        pool.close()
        hanging.close()


async def test_the_wait_for_a_free_connection_is_bounded_by_the_connect_limit_and_not_billed():
    async def slow(request, writer, index):
        await asyncio.sleep(1)
        writer.write(ok(b"{}"))
        return True

    pool = UpstreamPool(asyncio.get_running_loop(), limit=1)
    try:
        async with Server(slow) as server:
            busy = asyncio.ensure_future(call(pool, server.url))
            await asyncio.sleep(0.05)
            started = asyncio.get_running_loop().time()
            with pytest.raises(ConnectTimeout, match="no free upstream connection"):
                await pool.post(server.url, {}, b"{}", 0.2)
            assert asyncio.get_running_loop().time() - started < 0.8
            assert len(server.requests) == 1  # nothing of the second call was sent
            await busy
    finally:
        pool.close()


async def test_closing_the_pool_ends_every_waiting_call():
    async def never(request, writer, index):
        await asyncio.sleep(10)
        return True

    pool = UpstreamPool(asyncio.get_running_loop(), limit=1)
    async with Server(never) as server:
        calls = [asyncio.ensure_future(pool.post(server.url, {}, b"{}", 30)) for _ in range(4)]
        await asyncio.sleep(0.1)
        pool.close()
        done, pending = await asyncio.wait(calls, timeout=1)
        assert not pending
        assert all(isinstance(c.exception(), (UpstreamDisconnected, ConnectFailed)) for c in done)


@pytest.mark.parametrize("length", [b"10 ", b"10\t"])
async def test_a_body_cut_short_is_seen_whatever_the_whitespace_around_its_length(pool, length):
    async def cut(request, writer, index):
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: " + length + b"\r\n\r\n12345")
        return False

    async with Server(cut) as server:
        response = await pool.post(server.url, {}, b"{}", 5)
        with pytest.raises(ResponseCutShort):
            await response.read_all()
        response.close()


async def test_a_reset_inside_a_body_delimited_by_the_connection_is_not_its_end(pool):
    async def reset(request, writer, index):
        writer.write(b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{"choices":[{"text":"half an ans')
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
        writer.transport.abort()
        return False

    async with Server(reset) as server:
        response = await pool.post(server.url, {}, b"{}", 5)
        with pytest.raises(ResponseCutShort):
            await response.read_all()
        response.close()


async def test_a_response_released_twice_never_puts_its_connection_in_the_pool_twice(pool):
    async with Server(fixed(ok(b"{}"))) as server:
        response = await pool.post(server.url, {}, b"{}", 5)
        assert await response.read_all() == b"{}"
        response.release()
        response.release()
        response.close()  # after the release: not this response's connection any more
        assert pool.connections_open() == 1
        results = await asyncio.gather(call(pool, server.url), call(pool, server.url))
        assert [data for _, data, _ in results] == [b"{}", b"{}"]
        assert server.connections == 2  # the second call did not share the first one's socket


async def test_an_answer_before_the_whole_body_was_sent_closes_the_connection(pool):
    async def early(reader, writer):
        await reader.readuntil(b"\r\n\r\n")  # the head; the 16 MB body is never read
        writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\nno")
        await writer.drain()
        await asyncio.sleep(2)
        writer.close()

    server = await asyncio.start_server(early, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        response = await pool.post(f"http://127.0.0.1:{port}/v1", {}, b"x" * (16 << 20), 5)
        assert (response.status, await response.read_all()) == (401, b"no")
        response.release()
        assert pool.connections_open() == 0  # not pooled with the rest of the body still queued
    finally:
        server.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"Content-Length ": "0"},
        {"Transfer-Encoding\t": "chunked"},
        {"X Foo": "a"},
        {"X-A": "a\x7fb"},
        {"X-A": "\ud800"},
    ],
)
async def test_invalid_header_names_and_values_are_refused(pool, headers):
    with pytest.raises(InvalidRequest):
        await pool.post("http://127.0.0.1:9/v1", headers, b"{}", 5)


async def test_userinfo_is_sent_as_basic_credentials_and_the_path_is_percent_encoded(pool):
    async with Server(fixed(ok(b"{}"))) as server:
        url = server.url.replace("http://", "http://us%40er:p%3Ass@").replace("/v1/echo", "/v1/ech\u00f6")
        await call(pool, url)
        request = server.requests[0]
        assert request.startswith(b"POST /v1/ech%C3%B6?x=1 HTTP/1.1\r\n")
        expected = base64.b64encode(b"us@er:p:ss")
        assert b"\r\nAuthorization: Basic " + expected + b"\r\n" in request
        await call(pool, url, headers={"Authorization": "Bearer sk-own"})
        assert b"Basic" not in server.requests[1] and b"Bearer sk-own" in server.requests[1]
