"""GET /presets, /presets/{slug}, /presets/{slug}/versions, /presets/{slug}/versions/{n}."""

import pytest

pytestmark = pytest.mark.django_db


def _create(api, slug, body):
    response = api.post(f"/api/v1/presets/{slug}/responses", body, format="json")
    assert response.status_code == 200
    return response.json()["data"]


def test_list_most_recently_updated_first_without_designated_version(api):
    _create(api, "alpha", {"model": "a/1"})
    _create(api, "beta", {"model": "a/2"})
    _create(api, "alpha", {"model": "a/3"})  # a new version updates alpha
    response = api.get("/api/v1/presets")
    assert response.status_code == 200
    body = response.json()
    assert body["total_count"] == 2
    assert [item["slug"] for item in body["data"]] == ["alpha", "beta"]
    assert "designated_version" not in body["data"][0]
    assert body["data"][0]["designated_version_id"]


def test_list_pagination(api):
    for index in range(3):
        _create(api, f"p{index}", {"model": "a/b"})
    page = api.get("/api/v1/presets?offset=1&limit=1").json()
    assert page["total_count"] == 3 and len(page["data"]) == 1
    assert api.get("/api/v1/presets?limit=0").status_code == 400
    assert api.get("/api/v1/presets?offset=-1").status_code == 400


def test_get_one_with_designated_version(api):
    created = _create(api, "one", {"model": "a/b", "instructions": "sys"})
    response = api.get("/api/v1/presets/one")
    assert response.status_code == 200
    data = response.json()["data"]
    assert data == created
    assert data["designated_version"]["system_prompt"] == "sys"


def test_versions_ascending_and_one_version(api):
    _create(api, "v", {"model": "a/1"})
    _create(api, "v", {"model": "a/2", "instructions": "two"})
    versions = api.get("/api/v1/presets/v/versions").json()
    assert versions["total_count"] == 2
    assert [item["version"] for item in versions["data"]] == [1, 2]
    assert versions["data"][0]["config"] == {"model": "a/1"}
    second = api.get("/api/v1/presets/v/versions/2")
    assert second.status_code == 200
    assert second.json()["data"] == versions["data"][1]
    assert second.json()["data"]["system_prompt"] == "two"


def test_unknown_preset_or_version_is_404(api):
    _create(api, "v", {"model": "a/1"})
    for path in ("/api/v1/presets/nope", "/api/v1/presets/nope/versions", "/api/v1/presets/v/versions/2"):
        response = api.get(path)
        assert response.status_code == 404, path
        assert response.json()["error"]["code"] == 404
    assert api.get("/api/v1/presets/v/versions/x").status_code == 404
    for number in ("0", "2147483648", "99999999999999999999999"):
        assert api.get(f"/api/v1/presets/v/versions/{number}").status_code == 404, number


def test_another_organizations_preset_is_invisible(api, other_org):
    _create(api, "mine", {"model": "a/1"})
    other = other_org.client()
    assert other.get("/api/v1/presets").json() == {"data": [], "total_count": 0}
    assert other.get("/api/v1/presets/mine").status_code == 404
    assert other.get("/api/v1/presets/mine/versions").status_code == 404
    assert other.get("/api/v1/presets/mine/versions/1").status_code == 404


def test_no_patch_or_delete(api):
    _create(api, "fixed", {"model": "a/1"})
    assert api.patch("/api/v1/presets/fixed", {"name": "x"}, format="json").status_code == 405
    assert api.delete("/api/v1/presets/fixed").status_code == 405
