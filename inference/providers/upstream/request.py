"""The request's target, Host and head: a POST with the client's own headers, every other header validated."""

from __future__ import annotations

import base64
import functools
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from inference.providers.upstream.errors import ConnectFailed, InvalidRequest

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header name (RFC 9110 token)
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # control characters other than HTAB
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"  # RFC 3986 pchar and "/", existing escapes kept
_QUERY_SAFE = _PATH_SAFE + "?"


@functools.lru_cache(maxsize=256)
def target(url: str) -> tuple[tuple[str, str, int], bytes, bytes, str | None]:
    """((scheme, host, port), request target, Host header value, Basic credentials of the URL's userinfo or
    None) of an absolute http(s) URL."""
    try:
        parts = urlsplit(url)
        port_number = parts.port
    except ValueError as error:
        raise ConnectFailed(f"invalid URL: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ConnectFailed(f"unsupported URL scheme {parts.scheme!r}")
    host = parts.hostname
    if not host:
        raise ConnectFailed("URL without a host")
    default = 443 if scheme == "https" else 80
    port = default if port_number is None else port_number
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ConnectFailed(f"invalid host name {host!r}") from None
    shown = f"[{ascii_host}]" if ":" in ascii_host else ascii_host
    if port != default:
        shown = f"{shown}:{port}"
    target = quote(parts.path or "/", safe=_PATH_SAFE)
    if parts.query:
        target += "?" + quote(parts.query, safe=_QUERY_SAFE)
    if _BAD_VALUE.search(target + shown) or " " in target:
        raise ConnectFailed("URL with a space or a control character")
    credentials = None
    if parts.username is not None:  # as aiohttp did: the URL's userinfo sent as Basic credentials
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        credentials = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return (scheme, ascii_host, port), target.encode("ascii"), shown.encode("ascii"), credentials


def head(target: bytes, host: bytes, headers: dict[str, str], length: int, credentials: str | None) -> bytes:
    lines = [b"POST ", target, b" HTTP/1.1\r\nHost: ", host, b"\r\n"]
    accept = encoding = authorization = False
    try:
        for name, value in headers.items():
            if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
                raise InvalidRequest(f"header {name!r}: not a valid name, or a control character in its value")
            lowered = name.lower()
            if lowered in _OWN_HEADERS:
                continue  # the client's own
            accept = accept or lowered == "accept"
            encoding = encoding or lowered == "accept-encoding"
            authorization = authorization or lowered == "authorization"
            lines += [name.encode("ascii"), b": ", value.encode("utf-8"), b"\r\n"]
    except UnicodeEncodeError as error:  # a lone surrogate in a value
        raise InvalidRequest(f"header value that is not valid text: {error}") from None
    if credentials is not None and not authorization:
        lines += [b"Authorization: ", credentials.encode("ascii"), b"\r\n"]
    if not accept:
        lines.append(b"Accept: */*\r\n")
    if not encoding:
        lines.append(b"Accept-Encoding: gzip, deflate\r\n")
    lines += [b"Content-Length: ", str(length).encode(), b"\r\n\r\n"]
    return b"".join(lines)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A request ready to be written: its origin (the pool's key), its head and its body."""

    origin: tuple[str, str, int]
    head: bytes
    body: bytes


def prepare(url: str, headers: dict[str, str], body: bytes) -> Prepared:
    """The request to `url` built whole (InvalidRequest as `target` and `head` raise it), nothing sent: a
    caller can build it while it waits for something else, then hand it to `UpstreamPool.send`."""
    origin, path, host, credentials = target(url)
    return Prepared(origin, head(path, host, headers, len(body), credentials), body)
