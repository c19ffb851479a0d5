"""Every page of the admin a staff user can open renders, and every label on it is a proper name: the app and
model names the index, the app pages, the change lists and the add forms show are spelled as their Meta or
AppConfig declares them, acronyms in capitals (API, SCIM, BYOK, ...), plurals not made by gluing an "s" to a
word that is already plural ("tokenss")."""

from __future__ import annotations

import html
import re

import pytest
from django.apps import apps
from django.contrib import admin
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

ACRONYMS = ("api", "scim", "byok", "usd", "url", "zdr", "sso", "id")
PROJECT_APPS = {config.label for config in apps.get_app_configs() if not config.name.startswith(("django.", "rest_"))}


def _label_problems(label: str) -> list[str]:
    problems = []
    for word in re.findall(r"[A-Za-z]+", label):
        if word.lower() in ACRONYMS and word != word.upper():
            problems.append(f"{label!r}: {word!r} is an acronym, written {word.upper()}")
    if re.search(r"[a-z]ss\b", label) and not re.search(r"(access|address|class|process|business)\b", label):
        problems.append(f"{label!r}: a plural made of a word that already ends in s")
    return problems


def _registered():
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label in PROJECT_APPS:
            yield model, model_admin


def test_declared_labels_are_proper_names():
    problems = []
    for config in apps.get_app_configs():
        if config.label in PROJECT_APPS:
            problems += _label_problems(config.verbose_name)
            if config.verbose_name == config.label.title() and config.label.lower() in ACRONYMS:
                problems.append(f"app {config.label}: no verbose_name")
    for model, _ in _registered():
        problems += _label_problems(str(model._meta.verbose_name))
        problems += _label_problems(str(model._meta.verbose_name_plural))
    assert problems == [], problems


@pytest.fixture
def staff(org, settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    org.admin.is_staff = org.admin.is_superuser = True
    org.admin.save()
    client = Client()
    client.force_login(org.admin)
    return client


def _headings(page: str) -> list[str]:
    found = re.findall(r"<(?:h1|h2|caption|th scope=\"row\")[^>]*>(.*?)</", page, flags=re.S)
    found += re.findall(r"<a [^>]*>([^<]+)</a>", page)
    found += re.findall(r"<label[^>]*>(.*?)</label>", page, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", text)).strip() for text in found]


def test_every_admin_page_renders_with_proper_labels(staff):
    index = staff.get(reverse("admin:index"), secure=True)
    assert index.status_code == 200
    index_text = index.content.decode()
    pages = {reverse("admin:index"): index_text}
    for model, _ in _registered():
        meta = model._meta
        app_url = reverse("admin:app_list", args=[meta.app_label])
        changelist = reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
        for url in (app_url, changelist):
            if url not in pages:
                page = staff.get(url, secure=True)
                assert page.status_code == 200, url
                pages[url] = page.content.decode()
        plural = str(meta.verbose_name_plural)
        assert plural[:1].upper() + plural[1:] in index_text, plural
        assert str(apps.get_app_config(meta.app_label).verbose_name) in index_text
        title = re.search(r"<title>(.*?)</title>", pages[changelist], flags=re.S).group(1).lower()
        assert str(meta.verbose_name).lower() in html.unescape(title), changelist
        add = staff.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"), secure=True)
        assert add.status_code in (200, 403), meta.label  # 403: the admin offers no add form for this model
        if add.status_code == 200:
            assert f"Add {meta.verbose_name}" in add.content.decode()
            pages[f"add {meta.label}"] = add.content.decode()
    problems = sorted({p for page in pages.values() for text in _headings(page) for p in _label_problems(text)})
    assert problems == [], problems
