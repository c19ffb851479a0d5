"""SSRF guard: destination URLs and catalog base_urls in private, loopback or link-local ranges are refused.

The suite allows loopback everywhere else (tests/conftest.py), so every test here turns the guard on.
"""

from __future__ import annotations

import socket
import uuid

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from inference.models import Provider
from observability.models import Destination, OutboxEntry

pytestmark = pytest.mark.django_db

URL = "/api/v1/observability/destinations"
PRIVATE_HOSTS = [
    "10.0.0.5",
    "10.255.255.255",
    "172.16.0.1",
    "172.31.255.254",
    "192.168.1.10",
    "127.0.0.1",
    "127.8.9.10",
    "169.254.169.254",
    "0.0.0.0",
    "100.64.0.1",
    "[::1]",
    "[fc00::1]",
    "[fd12:3456::1]",
    "[fe80::1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:10.0.0.1]",
    "localhost",
]
PUBLIC_HOSTS = ["8.8.8.8", "172.32.0.1", "192.169.0.1", "[2606:4700:4700::1111]"]


@pytest.fixture(autouse=True)
def guard_on(settings):
    settings.GATEWAY_ALLOW_PRIVATE_URLS = False
    settings.GATEWAY_PRIVATE_URL_ALLOWLIST = []
    return settings


def webhook(api, url: str):
    return api.post(URL, {"name": "hook", "type": "webhook", "config": {"url": url}}, format="json")


def assert_refused(response, field: str):
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["metadata"]["field"] == field
    assert error["message"].startswith(f"{field}: must not point at a private")


@pytest.mark.parametrize("host", PRIVATE_HOSTS)
def test_webhook_url_in_a_private_range_is_refused(api, host):
    assert_refused(webhook(api, f"http://{host}:8080/hook"), "config.url")
    assert not Destination.objects.exists()


@pytest.mark.parametrize("host", PUBLIC_HOSTS)
def test_public_addresses_are_accepted(api, host):
    assert webhook(api, f"https://{host}/hook").status_code == 201


def test_every_url_field_of_every_type_is_guarded(api):
    cases = {
        "otel-collector": ({"endpoint": "http://10.1.2.3:4318"}, "config.endpoint"),
        "langfuse": ({"publicKey": "pk", "secretKey": "sk", "baseUrl": "http://192.168.0.2"}, "config.baseUrl"),
        "datadog": ({"apiKey": "k", "mlApp": "app", "url": "http://169.254.169.254/latest"}, "config.url"),
        "sentry": (
            {"dsn": "https://key@o1.ingest.sentry.io/1", "otlpEndpoint": "http://[::1]:4318"},
            "config.otlpEndpoint",
        ),
        "s3": (
            {"accessKeyId": "AK", "secretAccessKey": "SK", "bucketName": "b", "endpoint": "http://127.0.0.1:9000"},
            "config.endpoint",
        ),
    }
    for type_, (config, field) in cases.items():
        assert_refused(api.post(URL, {"name": type_, "type": type_, "config": config}, format="json"), field)


def test_patch_to_a_private_url_is_refused_and_changes_nothing(api):
    created = webhook(api, "https://8.8.8.8/hook")
    assert created.status_code == 201
    destination_id = created.json()["data"]["id"]
    response = api.patch(f"{URL}/{destination_id}", {"config": {"url": "http://10.0.0.1/x"}}, format="json")
    assert_refused(response, "config.url")
    assert Destination.objects.get(id=destination_id).config["url"] == "https://8.8.8.8/hook"


def test_a_host_name_resolving_to_a_private_address_is_refused(api, monkeypatch):
    real = socket.getaddrinfo

    def fake_getaddrinfo(host, *args, **kwargs):
        if host == "traces.attacker.example":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.9.8.7", 0))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", fake_getaddrinfo)
    response = webhook(api, "https://traces.attacker.example/hook")
    assert_refused(response, "config.url")
    assert "10.9.8.7" in response.json()["error"]["message"]


def test_allow_private_urls_setting_allows_them(api, settings):
    settings.GATEWAY_ALLOW_PRIVATE_URLS = True
    assert webhook(api, "http://127.0.0.1:9/hook").status_code == 201


def test_allowlist_of_cidrs_and_host_names(api, settings):
    settings.GATEWAY_PRIVATE_URL_ALLOWLIST = ["10.20.0.0/16", "localhost"]
    assert webhook(api, "http://10.20.3.4/hook").status_code == 201
    assert webhook(api, "http://localhost:8080/hook").status_code == 201
    assert_refused(webhook(api, "http://10.21.0.1/hook"), "config.url")


def test_worker_refuses_delivery_when_the_address_became_private(org, settings):
    """DNS rebinding: the destination was saved while allowed; the worker checks again before sending."""
    from django.utils import timezone

    from tests.observability.test_worker import make_worker

    settings.GATEWAY_ALLOW_PRIVATE_URLS = True
    response = webhook(org.client(), "http://127.0.0.1:9/hook")
    assert response.status_code == 201
    destination = Destination.objects.get(id=response.json()["data"]["id"])
    settings.GATEWAY_ALLOW_PRIVATE_URLS = False
    entry = OutboxEntry.objects.create(
        destination=destination, generation_id=uuid.uuid4(), payload={"id": "x"}, next_attempt_at=timezone.now()
    )
    assert make_worker().run_once() == 1
    entry.refresh_from_db()
    assert entry.status == "dead"
    assert "destination URL refused" in entry.last_error


def test_catalog_base_url_in_a_private_range_is_refused(tmp_path):
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "providers:\n  - {slug: internal, api_format: openai-chat, base_url: 'http://169.254.169.254/v1'}\n"
    )
    with pytest.raises(CommandError, match=r"providers\[0\]: 'base_url' must not point at a private"):
        call_command("load_catalog", str(catalog))
    assert not Provider.objects.filter(slug="internal").exists()


def test_catalog_base_url_allowed_by_the_allowlist(tmp_path, settings):
    settings.GATEWAY_PRIVATE_URL_ALLOWLIST = ["169.254.0.0/16"]
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "providers:\n  - {slug: internal, api_format: openai-chat, base_url: 'http://169.254.169.254/v1'}\n"
    )
    call_command("load_catalog", str(catalog))
    assert Provider.objects.get(slug="internal").base_url == "http://169.254.169.254/v1"


def test_admin_provider_form_refuses_a_private_base_url():
    from inference.admin import ProviderForm

    form = ProviderForm(data={"slug": "p", "name": "P", "api_format": "openai-chat", "base_url": "http://[fe80::1]/v1"})
    assert not form.is_valid()
    assert "must not point at a private" in form.errors["base_url"][0]


@pytest.mark.parametrize("name", ["DJANGO_SECRET_KEY", "GATEWAY_BYOK_ENCRYPTION_KEYS", "DATABASE_URL", "PATH", "HOME"])
def test_catalog_api_key_env_naming_a_gateway_secret_is_refused(tmp_path, name):
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        f"providers:\n  - {{slug: leaky, api_format: openai-chat, base_url: 'https://api.example.com/v1', "
        f"api_key_env: {name}}}\n"
    )
    with pytest.raises(CommandError, match=r"providers\[0\]: 'api_key_env' "):
        call_command("load_catalog", str(catalog))
    assert not Provider.objects.filter(slug="leaky").exists()


def test_admin_provider_form_refuses_a_secret_api_key_env_and_bad_timeouts():
    from inference.admin import ProviderForm

    data = {"slug": "p", "name": "P", "api_format": "openai-chat", "base_url": "https://api.example.com/v1"}
    form = ProviderForm(data={**data, "api_key_env": "DJANGO_SECRET_KEY", "timeouts": '{"total": -1}'})
    assert not form.is_valid()
    assert "api_key_env" in form.errors and "timeouts" in form.errors
    form = ProviderForm(data={**data, "api_key_env": "EXAMPLE_API_KEY", "timeouts": '{"total": 30}', "regions": "[]"})
    assert form.is_valid(), form.errors


@pytest.mark.parametrize(
    "host", ["2130706433", "127.1", "0", "0177.0.0.1", "127.000.000.001", "0x7f000001", "127.0.0.1.", "2852039166"]
)
def test_every_numeric_spelling_of_a_private_address_is_refused(api, host):
    """The admin-URL check reads a host as the socket layer does (gateway_project/netguard.py), like the web fetch."""
    assert_refused(webhook(api, f"http://{host}:8080/hook"), "config.url")


def test_a_numeric_host_no_resolver_reads_is_refused(api):
    response = webhook(api, "http://1.2.3.4.5/hook")
    assert response.status_code == 400
    assert (
        response.json()["error"]["message"] == "config.url: must name a valid host (1.2.3.4.5 is not a valid address)"
    )
