"""The egress proxy of an outbound call, from the standard environment variables.

`HTTPS_PROXY` carries the `https://` calls, `HTTP_PROXY` the `http://` ones (lower-case names too, which win,
as curl and Python's urllib read them); `NO_PROXY` lists the hosts reached directly (comma-separated names,
each matching itself and its subdomains, `host:port`, IP addresses, or `*` for every host; no CIDR ranges).
A proxy URL is `http://[user:password@]host:port` (a scheme-less `host:port` is read as `http://`); its
credentials go as `Proxy-Authorization: Basic`. An `https://` call goes through the proxy as a CONNECT tunnel
(TLS end to end, the certificate checked against the upstream's name), an `http://` call as an absolute-form
request. Any other proxy scheme is refused at the call (`UnsupportedProxy`) rather than ignored: traffic that
an operator routes through a proxy must not leave directly.

The variables are read once per process, at the first call (aiohttp's `trust_env` would read them, and
`~/.netrc`, on a thread for every request); `reload()` reads them again (tests). A host's answer is cached.
"""

from __future__ import annotations

import functools
import urllib.request

from aiohttp import encode_basic_auth
from yarl import URL

Proxy = tuple[URL | None, dict[str, str] | None]  # (proxy URL, the headers for the proxy: its credentials)
NO_PROXY: Proxy = (None, None)


class UnsupportedProxy(ValueError):
    """A proxy variable whose URL is not an http:// proxy."""


_environment: dict[str, str] | None = None


def _proxies() -> dict[str, str]:
    global _environment
    if _environment is None:
        _environment = urllib.request.getproxies_environment()
    return _environment


def reload() -> None:
    """Read the proxy variables again at the next call."""
    global _environment
    _environment = None
    proxy_for.cache_clear()


def _parse(value: str, variable: str) -> Proxy:
    if "://" not in value:
        value = f"http://{value}"
    try:
        url = URL(value)
    except ValueError:
        raise UnsupportedProxy(f"{variable} is not a URL") from None
    if url.scheme != "http" or not url.host:
        raise UnsupportedProxy(f"{variable} must be an http://host:port proxy URL (scheme {url.scheme!r})")
    headers = None
    if url.user is not None:
        headers = {"Proxy-Authorization": encode_basic_auth(url.user, url.password or "")}
    return url.with_user(None).with_path("").with_query(None).with_fragment(None), headers


@functools.lru_cache(maxsize=1024)
def proxy_for(scheme: str, host: str, port: int | None) -> Proxy:
    """(proxy URL, headers for the proxy) for a call to `scheme://host:port`, or (None, None) for a direct one;
    UnsupportedProxy for a proxy variable that is not an http:// URL."""
    proxies = _proxies()
    value = proxies.get(scheme)
    if not value:
        return NO_PROXY
    if urllib.request.proxy_bypass_environment(host if port is None else f"{host}:{port}", proxies):
        return NO_PROXY
    return _parse(value, f"{scheme.upper()}_PROXY")


def proxy_for_url(url: URL, headers: dict[str, str]) -> tuple[dict[str, str], URL | None, dict[str, str] | None]:
    """(the request's headers, the proxy URL or None, the headers of the proxy's CONNECT) of a call to `url`.
    Through a proxy, an http:// call carries the proxy's credentials itself (absolute form: the proxy takes
    them off before it forwards the request); an https:// call sends them on its CONNECT only (aiohttp sends
    `proxy_headers` on CONNECT alone)."""
    proxy, proxy_headers = proxy_for(url.scheme, url.host or "", url.explicit_port)
    if proxy_headers is not None and url.scheme == "http":
        return {**headers, **proxy_headers}, proxy, None
    return headers, proxy, proxy_headers
