"""Reads of the presets app (management plane and the data plane's loader)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import orjson
from django.db.models import QuerySet

from gateway_project.api.errors import GatewayError
from presets.config import to_responses_fields
from presets.models import Preset, PresetVersion


def preset_list(*, organization_id: uuid.UUID) -> QuerySet[Preset]:
    """The organization's presets, most recently updated first."""
    return Preset.objects.filter(organization_id=organization_id).order_by("-updated_at", "slug")


def preset_get(*, organization_id: uuid.UUID, slug: str) -> Preset:
    """One preset of the organization with its designated version, or 404."""
    preset = (
        Preset.objects.select_related("designated_version").filter(organization_id=organization_id, slug=slug).first()
    )
    if preset is None:
        raise GatewayError(404, f"Preset '{slug}' not found")
    return preset


def preset_versions(*, preset: Preset) -> QuerySet[PresetVersion]:
    """The versions of a preset, oldest first."""
    return PresetVersion.objects.filter(preset=preset).order_by("version")


MAX_VERSION = 2**31 - 1


def preset_version_get(*, preset: Preset, version: int) -> PresetVersion:
    """One version of a preset, or 404 (also for numbers no version can have)."""
    found = None
    if 1 <= version <= MAX_VERSION:
        found = PresetVersion.objects.filter(preset=preset, version=version).first()
    if found is None:
        raise GatewayError(404, f"Version {version} of preset '{preset.slug}' not found")
    return found


@dataclass(frozen=True, slots=True)
class PresetSnapshot:
    """What the data plane needs of a preset: its status and the designated version, as request fields."""

    id: uuid.UUID
    slug: str
    status: str
    version_id: uuid.UUID | None
    version: int | None
    fields_json: bytes  # Responses request fields of the designated version's config, as JSON
    model: str | None
    system_prompt: str

    def fields(self) -> dict[str, Any]:
        """A fresh copy of the preset's request fields (later stages may change the request in place)."""
        return orjson.loads(self.fields_json)

    def pipeline_stage(self) -> dict[str, Any]:
        """The `service_metadata.pipeline` stage telling which preset version shaped the request."""
        return {
            "type": "preset",
            "name": self.slug,
            "preset_id": str(self.id),
            "version": self.version,
            "summary": f"Applied preset '{self.slug}' version {self.version}",
        }


def preset_snapshot(organization_id: uuid.UUID, slug: str) -> PresetSnapshot | None:
    """The preset of an organization by slug, for the inference middleware (sync, one query); None if unknown."""
    preset = (
        Preset.objects.select_related("designated_version").filter(organization_id=organization_id, slug=slug).first()
    )
    if preset is None:
        return None
    version = preset.designated_version
    fields = to_responses_fields(version.config, version.format) if version else {}
    return PresetSnapshot(
        id=preset.id,
        slug=preset.slug,
        status=preset.status,
        version_id=version.id if version else None,
        version=version.version if version else None,
        fields_json=orjson.dumps(fields),
        model=fields.get("model") or None,
        system_prompt=version.system_prompt if version else "",
    )
