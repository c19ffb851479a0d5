"""Throttled sign-in for the Django admin: after `GATEWAY_ADMIN_LOGIN_FAILURES` failed attempts for one user
name (or four times as many from one address) within `GATEWAY_ADMIN_LOGIN_WINDOW_SECONDS`, every attempt is
refused, the right password included, until the window has passed. Counters live in Django's cache (Redis
with `REDIS_URL`, shared by every process; per process otherwise); a cache that cannot be reached does not
stop sign-in (logged)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError

logger = logging.getLogger("gateway.admin")
PER_ADDRESS_FACTOR = 4


def _keys(username: str, address: str) -> list[tuple[str, int]]:
    limit = settings.GATEWAY_ADMIN_LOGIN_FAILURES
    return [
        (f"admin-login:user:{username.strip().lower()[:150]}", limit),
        (f"admin-login:addr:{address}", limit * PER_ADDRESS_FACTOR),
    ]


def _throttled(keys: list[tuple[str, int]]) -> bool:
    try:
        counts = cache.get_many([key for key, _ in keys])
    except Exception as error:
        logger.warning("admin sign-in throttle unavailable: %s", error)
        return False
    return any(int(counts.get(key) or 0) >= limit for key, limit in keys)


def _count_failure(keys: list[tuple[str, int]]) -> None:
    window = settings.GATEWAY_ADMIN_LOGIN_WINDOW_SECONDS
    try:
        for key, _ in keys:
            if cache.add(key, 1, window):
                continue
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.add(key, 1, window)
    except Exception as error:
        logger.warning("admin sign-in throttle unavailable: %s", error)


class ThrottledAdminAuthenticationForm(AdminAuthenticationForm):
    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "throttled": "Too many failed sign-in attempts. Try again later.",
    }

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = self.request.META.get("REMOTE_ADDR", "") if self.request is not None else ""
        keys = _keys(username, address)
        if _throttled(keys):
            logger.warning("admin sign-in refused: too many failures for %r from %s", username[:150], address)
            raise ValidationError(self.error_messages["throttled"], code="throttled")
        try:
            cleaned = super().clean()
        except ValidationError:
            _count_failure(keys)
            raise
        try:
            cache.delete(keys[0][0])
        except Exception:
            pass
        return cleaned
