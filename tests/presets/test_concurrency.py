"""Concurrent POSTs to one slug through the HTTP endpoints: every call gets its own version number, none is
lost or duplicated (PostgreSQL: row locks; SQLite: retries on the unique constraints)."""

import threading

import pytest
from django.db import connection, connections

from presets.models import Preset, PresetVersion

THREADS = 8
POSTS_PER_THREAD = 3


def _poster(org, slug: str):
    client = org.client()

    def post(kind: str, body: dict) -> tuple[int, int | None]:
        response = client.post(f"/api/v1/presets/{slug}/{kind}", body, format="json")
        if response.status_code != 200:
            return response.status_code, None
        return 200, response.json()["data"]["designated_version"]["version"]

    return post


def _hammer(org, slug: str) -> list[tuple[int, int | None]]:
    barrier = threading.Barrier(THREADS)
    results: list[tuple[int, int | None]] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        try:
            post = _poster(org, slug)
            barrier.wait()
            for number in range(POSTS_PER_THREAD):
                kind = "responses" if (index + number) % 2 else "messages"
                result = post(kind, {"model": f"m/{index}-{number}"})
                with lock:
                    results.append(result)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(index,)) for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("existing", [False, True], ids=["new-slug", "existing-slug"])
def test_concurrent_posts_never_share_a_version_number(org, existing):
    if existing:
        assert org.client().post("/api/v1/presets/race/responses", {"model": "m/0"}, format="json").status_code == 200
    results = _hammer(org, "race")
    statuses = [status for status, _ in results]
    assert len(results) == THREADS * POSTS_PER_THREAD
    assert set(statuses) <= {200, 409}, statuses
    # Row locks (PostgreSQL) or retries on the unique constraints (SQLite) let every call through.
    assert statuses.count(200) == len(statuses), f"{connection.vendor}: {statuses}"
    offset = 1 if existing else 0
    versions = sorted(PresetVersion.objects.values_list("version", flat=True))
    assert versions == list(range(1, len(results) + offset + 1))
    answered = sorted(version for _, version in results)
    assert answered == list(range(offset + 1, len(results) + offset + 1))  # each caller saw its own version
    preset = Preset.objects.get(slug="race")
    assert preset.designated_version.version == len(results) + offset
