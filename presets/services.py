"""Writes of the presets app: creating a preset or a new version of it from a request body."""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from contextlib import nullcontext
from typing import Any

from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Max
from django.utils import timezone

from accounts.principal import Principal
from gateway_project.api.errors import GatewayError, validation_error
from presets.config import (
    CHAT_CONFIG_FIELDS,
    MESSAGES_CONFIG_FIELDS,
    RESPONSES_CONFIG_FIELDS,
    pick_config,
    system_prompt_from_chat,
    system_prompt_from_messages,
)
from presets.models import Preset, PresetFormat, PresetStatus, PresetVersion

logger = logging.getLogger("gateway.presets")

SLUG_MAX_LENGTH = 200
# RFC 3986 unreserved characters: safe in a path segment and in `@preset/<slug>` without escaping.
SLUG_PATTERN = re.compile(r"[A-Za-z0-9._~-]+")
# Attempts when concurrent writers race on the same slug (unique constraints decide the winner).
MAX_ATTEMPTS = 8
# SQLite has one writer at a time and no row locks: threads of one process take turns here instead of
# failing on "database is locked"; other processes are covered by the busy timeout and the retries.
_sqlite_writer = threading.Lock()


def preset_slug_validate(slug: str) -> str:
    """400 unless `slug` is 1 to 200 URL-safe characters (letters, digits, `-`, `_`, `.`, `~`), not only dots."""
    if not slug:
        raise validation_error("slug", "must be at least 1 character")
    if len(slug) > SLUG_MAX_LENGTH:
        raise validation_error("slug", f"must be at most {SLUG_MAX_LENGTH} characters")
    if not SLUG_PATTERN.fullmatch(slug) or set(slug) == {"."}:
        raise validation_error("slug", "must be URL-safe: letters, digits, '-', '_', '.', '~' (not only dots)")
    return slug


def creator_id_for(principal: Principal) -> str:
    """Who created a preset or version: the key creator's user id, or the key's hash for a key without one."""
    return str(principal.user_id) if principal.user_id else principal.key_hash


def _require_model(config: dict[str, Any]) -> None:
    if not config.get("model") and not config.get("models"):
        raise validation_error("model", "is required: a preset must name a model (or models)")


def _reject_nul(value: Any, path: str) -> None:
    """400 for a NUL character anywhere in what is stored (PostgreSQL text and jsonb cannot hold it)."""
    if isinstance(value, str):
        if "\x00" in value:
            raise validation_error(path, "must not contain NUL characters")
    elif isinstance(value, dict):
        for key, item in value.items():
            _reject_nul(key, path)
            _reject_nul(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _reject_nul(item, f"{path}[{index}]")


def _lock_or_create(principal: Principal, slug: str, creator: str) -> Preset:
    preset = Preset.objects.select_for_update().filter(organization_id=principal.organization_id, slug=slug).first()
    if preset is not None:
        return preset
    return Preset.objects.create(
        organization_id=principal.organization_id,
        workspace_id=principal.workspace_id,
        slug=slug,
        name=slug,
        status=PresetStatus.ACTIVE,
        creator_user_id=creator,
    )


def _add_version(
    *, principal: Principal, slug: str, source_format: str, config: dict[str, Any], system_prompt: str
) -> Preset:
    creator = creator_id_for(principal)
    with _sqlite_writer if connection.vendor == "sqlite" else nullcontext(), transaction.atomic():
        preset = _lock_or_create(principal, slug, creator)
        if preset.status == PresetStatus.ARCHIVED:
            raise GatewayError(409, f"Preset '{slug}' is archived; it takes no new versions")
        last = PresetVersion.objects.filter(preset=preset).aggregate(last=Max("version"))["last"] or 0
        version = PresetVersion.objects.create(
            preset=preset,
            version=last + 1,
            format=source_format,
            config=config,
            system_prompt=system_prompt,
            creator_id=creator,
        )
        preset.designated_version = version
        preset.save(update_fields=["designated_version", "updated_at"])
    return preset


def _is_lock_timeout(error: OperationalError) -> bool:
    return "locked" in str(error).lower() or "deadlock" in str(error).lower()


def preset_version_create(
    *, principal: Principal, slug: str, source_format: str, config: dict[str, Any], system_prompt: str
) -> Preset:
    """Create the preset `slug` (if new) and its next version, designated at once.

    Concurrent calls for one slug serialize on the preset row (SELECT ... FOR UPDATE); the unique
    constraints on (organization, slug) and (preset, version) are the backstop where row locks do not
    exist (SQLite): the loser of a race retries, and after MAX_ATTEMPTS the call answers 409.
    """
    preset_slug_validate(slug)
    _require_model(config)
    _reject_nul(config, "")
    _reject_nul(system_prompt, "system_prompt")
    for attempt in range(MAX_ATTEMPTS):
        if attempt:
            time.sleep(random.uniform(0.001, 0.01) * attempt)  # let the winner commit before trying again
        try:
            return _add_version(
                principal=principal,
                slug=slug,
                source_format=source_format,
                config=config,
                system_prompt=system_prompt,
            )
        except IntegrityError:
            logger.info("preset %s: concurrent version write, retrying", slug)
        except OperationalError as error:
            if not _is_lock_timeout(error):
                raise
            logger.info("preset %s: database busy, retrying", slug)
    raise GatewayError(409, f"Preset '{slug}' is being changed concurrently; retry the request")


def preset_create_from_responses(*, principal: Principal, slug: str, body: dict[str, Any]) -> Preset:
    """A new version from a validated Responses body: its preset fields, `instructions` as the system prompt."""
    return preset_version_create(
        principal=principal,
        slug=slug,
        source_format=PresetFormat.RESPONSES,
        config=pick_config(body, RESPONSES_CONFIG_FIELDS),
        system_prompt=body.get("instructions") or "",
    )


def preset_create_from_messages(*, principal: Principal, slug: str, body: dict[str, Any]) -> Preset:
    """A new version from a validated messages body: its preset fields, `system` as the system prompt."""
    return preset_version_create(
        principal=principal,
        slug=slug,
        source_format=PresetFormat.MESSAGES,
        config=pick_config(body, MESSAGES_CONFIG_FIELDS),
        system_prompt=system_prompt_from_messages(body.get("system")),
    )


def preset_create_from_chat(*, principal: Principal, slug: str, body: dict[str, Any]) -> Preset:
    """A new version from a validated Chat Completions body: its preset fields, its system and developer
    messages as the system prompt."""
    return preset_version_create(
        principal=principal,
        slug=slug,
        source_format=PresetFormat.CHAT,
        config=pick_config(body, CHAT_CONFIG_FIELDS),
        system_prompt=system_prompt_from_chat(body.get("messages")),
    )


def status_timestamp():
    """The time a status change is stamped with (`status_updated_at`)."""
    return timezone.now()


def preset_status_set(*, preset: Preset, status: str) -> Preset:
    """Change the status (active, disabled, archived) and stamp `status_updated_at`."""
    if status not in PresetStatus.values:
        raise validation_error("status", f"must be one of {', '.join(PresetStatus.values)}")
    if preset.status != status:
        preset.status = status
        preset.status_updated_at = status_timestamp()
        preset.save(update_fields=["status", "status_updated_at", "updated_at"])
    return preset
