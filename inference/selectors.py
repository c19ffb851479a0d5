"""Reads of Generation records for GET /generation (always within the caller's organization)."""

from __future__ import annotations

import re
import uuid

from gateway_project.api.errors import validation_error
from inference.models import Generation

# The id an answer carried: the request id (x-request-id), or it behind a wire-format prefix (`resp_...`).
_HEX = "[0-9A-Fa-f]"
_ID = re.compile(rf"^(?:[A-Za-z]+[_-])?({_HEX}{{8}}-?{_HEX}{{4}}-?{_HEX}{{4}}-?{_HEX}{{4}}-?{_HEX}{{12}})$")


def generation_id(value: str) -> uuid.UUID:
    """The Generation id inside `value` (`<uuid>` or `<prefix>_<uuid>`); 400 naming `id` otherwise."""
    match = _ID.match(value.strip())
    if match is None:
        raise validation_error("id", "must be the id of a response (`resp_<uuid>`) or its x-request-id")
    return uuid.UUID(match.group(1))


def generation_get(*, organization_id: uuid.UUID, id: str) -> Generation | None:
    """The Generation `id` of the organization, or None (another organization's id reads as absent)."""
    rows = Generation.objects.select_related("endpoint__provider")
    return rows.filter(organization_id=organization_id, id=generation_id(id)).first()
