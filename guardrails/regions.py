"""The data region a request arrived through, from the deployment's configuration, never from the client.

A process serves one region, `GATEWAY_REGION` (`global`, `europe` or `us`; default `global`). A deployment
whose processes serve several regions' domains behind a proxy names that proxy in `GATEWAY_TRUSTED_PROXIES`
(addresses or CIDR ranges) and the header the proxy sets in `GATEWAY_REGION_HEADER` (for example
`X-Gateway-Region`): the header counts only on a connection from a trusted proxy, and only with a known
region as its value. The client's `Host` header plays no part: before, `Host: eu.example.com` sent to any
ingress passed an `allowed_data_regions: ["europe"]` guardrail.
"""

from __future__ import annotations

import functools
import ipaddress

from django.conf import settings
from django.core import checks

REGIONS = ("global", "europe", "us")


@functools.lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def is_trusted_proxy(address: str) -> bool:
    """Whether a connection from `address` comes from a proxy named in GATEWAY_TRUSTED_PROXIES."""
    if not address:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in _networks(tuple(settings.GATEWAY_TRUSTED_PROXIES)))


def request_region(client_ip: str, headers: dict[str, str]) -> str:
    """The region of a request: the trusted proxy's header when there is one, else the process's region."""
    header = settings.GATEWAY_REGION_HEADER.lower()
    if header and header in headers and is_trusted_proxy(client_ip):
        value = headers[header].strip().lower()
        if value in REGIONS:
            return value
    return settings.GATEWAY_REGION


@checks.register(checks.Tags.security, "startup")
def check_region_settings(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """The region settings must be usable: a known GATEWAY_REGION, parseable proxies, no retired setting."""
    errors: list[checks.CheckMessage] = []
    if settings.GATEWAY_REGION not in REGIONS:
        errors.append(checks.Error(f"GATEWAY_REGION must be one of {', '.join(REGIONS)}", id="guardrails.E001"))
    try:
        _networks(tuple(settings.GATEWAY_TRUSTED_PROXIES))
    except ValueError as exc:
        errors.append(checks.Error(f"GATEWAY_TRUSTED_PROXIES: {exc}", id="guardrails.E002"))
    if getattr(settings, "GATEWAY_REGION_HOSTS_SET", False):
        errors.append(
            checks.Error(
                "GATEWAY_REGION_HOSTS is no longer read: a client chooses its Host header, so it cannot decide "
                "the data region",
                hint="Set GATEWAY_REGION per process, or GATEWAY_REGION_HEADER and GATEWAY_TRUSTED_PROXIES for a "
                "proxy that sets the region (docs/guardrails.md).",
                id="guardrails.E003",
            )
        )
    return errors
