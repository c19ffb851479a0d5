"""The raw provider key is nowhere: not in responses, the database, logs, the admin or error messages."""

from __future__ import annotations

import json
import logging

import pytest
from django.test import Client

from byok.models import ProviderCredential
from tests.byok.helpers import create_credential, database_dump, make_provider

pytestmark = pytest.mark.django_db

FIRST_KEY = "sk-secret-first-Hq2Wv8Ln4Xs6Dk1Pz3RaTy"
SECOND_KEY = "sk-secret-second-Mb7Gc5Jt9Uf2Ei4Ow6QxZr"


def test_raw_keys_are_in_no_response_no_table_and_no_log_line(api, org, caplog):
    make_provider("openai")
    caplog.set_level(logging.DEBUG)
    bodies = []
    created = api.post("/api/v1/byok", {"provider": "openai", "key": FIRST_KEY, "name": "n"}, format="json")
    bodies.append(created.content.decode())
    credential_id = created.json()["data"]["id"]
    for response in (
        api.get("/api/v1/byok"),
        api.get(f"/api/v1/byok/{credential_id}"),
        api.patch(f"/api/v1/byok/{credential_id}", {"key": SECOND_KEY}, format="json"),
        api.patch(f"/api/v1/byok/{credential_id}", {"key": SECOND_KEY, "name": "n" * 300}, format="json"),
        api.patch(f"/api/v1/byok/{credential_id}", {"key": SECOND_KEY, "allowed_api_key_hashes": []}, format="json"),
        api.post("/api/v1/byok", {"provider": "nope", "key": FIRST_KEY}, format="json"),
        api.post("/api/v1/byok", {"provider": "openai", "key": FIRST_KEY, "sort_order": "x"}, format="json"),
    ):
        bodies.append(response.content.decode())
    assert [b for b in bodies if FIRST_KEY in b or SECOND_KEY in b] == []

    dump = database_dump()
    assert "sk-...QxZr" in dump  # the dump does hold the credential row
    assert FIRST_KEY not in dump and SECOND_KEY not in dump

    logged = "\n".join(record.getMessage() for record in caplog.records) + caplog.text
    assert "created" in logged  # the service did log
    assert FIRST_KEY not in logged and SECOND_KEY not in logged

    assert api.delete(f"/api/v1/byok/{credential_id}").json() == {"deleted": True}
    assert "sk-...QxZr" not in database_dump()


def test_admin_never_shows_the_key_and_can_rotate_it(api, org):
    make_provider("openai")
    data = create_credential(api, key=FIRST_KEY)
    stored = ProviderCredential.objects.get(pk=data["id"])
    org.admin.is_staff = org.admin.is_superuser = True
    org.admin.save()
    client = Client()
    client.force_login(org.admin)
    listing = client.get("/admin/byok/providercredential/")
    change = client.get(f"/admin/byok/providercredential/{data['id']}/change/")
    assert listing.status_code == 200 and change.status_code == 200
    for page in (listing, change):
        html = page.content.decode()
        assert FIRST_KEY not in html and stored.key_ciphertext not in html
        assert "sk-...QxZr" not in html
    assert "sk-...RaTy" in change.content.decode()

    form = {
        "organization": str(org.organization.id),
        "workspace": str(org.workspace.id),
        "provider": "openai",
        "name": "via admin",
        "sort_order": "0",
        "allowed_api_key_hashes": "null",
        "allowed_models": "null",
        "allowed_user_ids": "null",
        "new_key": SECOND_KEY,
    }
    response = client.post(f"/admin/byok/providercredential/{data['id']}/change/", form, follow=True)
    assert response.status_code == 200 and SECOND_KEY not in response.content.decode()
    stored.refresh_from_db()
    assert stored.label == "sk-...QxZr" and stored.name == "via admin"

    added = client.post("/admin/byok/providercredential/add/", {**form, "new_key": ""})
    assert added.status_code == 200 and "Enter the provider key." in added.content.decode()
    unknown = client.post("/admin/byok/providercredential/add/", {**form, "provider": "nope"})
    assert "Unknown provider" in unknown.content.decode()
    bad_hash = client.post("/admin/byok/providercredential/add/", {**form, "allowed_api_key_hashes": '["abc"]'})
    assert "64 lowercase hexadecimal" in bad_hash.content.decode()
    foreign = client.post("/admin/byok/providercredential/add/", {**form, "allowed_api_key_hashes": f'["{"e" * 64}"]'})
    assert "unknown API key hash" in foreign.content.decode()
    too_many = client.post(
        "/admin/byok/providercredential/add/", {**form, "allowed_models": json.dumps([f"m{i}" for i in range(101)])}
    )
    assert "no more than 100 elements" in too_many.content.decode()
    assert ProviderCredential.objects.count() == 1

    deleted = client.post(f"/admin/byok/providercredential/{data['id']}/delete/", {"post": "yes"}, follow=True)
    assert deleted.status_code == 200 and ProviderCredential.objects.count() == 0
