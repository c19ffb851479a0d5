"""Helpers to write Generation rows and rankings rows for the rankings tests."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pytest

from inference.models import Generation, Model

_counter = itertools.count()


def add_model(slug: str, public: bool = True, canonical: str | None = None) -> Model:
    return Model.objects.create(slug=slug, canonical_slug=canonical or slug, vendor=slug.split("/")[0], public=public)


def add_generation(
    org,
    model: str,
    day: date,
    *,
    input_tokens: int = 100,
    output_tokens: int = 10,
    permaslug: str = "",
    tool_calls: int = 0,
    input_modalities=None,
    output_modalities=None,
    category: str | None = None,
    language_type: str | None = None,
    hour: int = 12,
) -> Generation:
    return Generation.objects.create(
        organization=org.organization,
        key_hash=org.inference_hash,
        model=model,
        model_permaslug=permaslug,
        status="completed",
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        tool_calls=tool_calls,
        input_modalities=input_modalities or ["text"],
        output_modalities=output_modalities or ["text"],
        category=category,
        language_type=language_type,
        created_at=datetime(day.year, day.month, day.day, hour, tzinfo=UTC) + timedelta(seconds=next(_counter) % 60),
    )


@pytest.fixture
def rankings_client(org):
    return org.client(org.inference_key)
