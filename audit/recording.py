"""Recording management changes: model signals, with the acting key or user taken from the current request.

`AuditContextMiddleware` (Django middleware) makes the request visible to the signal handlers for its
duration; a change saved outside a management request (management commands, the data plane, migrations) is
not recorded. The actor is read when the change is saved: DRF's authentication has put the key's Principal
on the request by then (`request.user`), the admin's session has put the staff User there.

Operations that are not a model save (a response-cache purge) call `record_operation`, with the current
request's actor, or from a management command with `command_actor(...)`.

`pre_save` reads the row as stored (one SELECT, management plane only) so `post_save` can record exactly the
fields that changed; `post_delete` records deletions (cascades included). Secret fields (registry.is_secret)
are recorded as `"***"`.
"""

from __future__ import annotations

import contextvars
import datetime
import decimal
import getpass
import os
import uuid
from typing import Any

from django.apps import apps
from django.db.models.signals import post_delete, post_save, pre_save
from django.utils import timezone

from audit.models import Action, AuditEvent, Source
from audit.registry import AUDITED, Audited

_request: contextvars.ContextVar[Any] = contextvars.ContextVar("audit_request", default=None)
MASK = "***"


class AuditContextMiddleware:
    """Django middleware: management changes made while a request runs are recorded with its actor."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _request.set(request)
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)


def source_of(path: str) -> str:
    if path.startswith("/admin/"):
        return Source.ADMIN
    if "/scim/" in path:
        return Source.SCIM
    return Source.API


def actor_of(request) -> dict[str, Any]:
    """actor_type, actor, actor_name and the actor's organization id."""
    from accounts.principal import Principal

    user = getattr(request, "user", None)
    if isinstance(user, Principal):
        return {
            "actor_type": "api_key",
            "actor": user.key_hash,
            "actor_name": user.key_name,
            "org": user.organization_id,
        }
    if user is not None and getattr(user, "is_authenticated", False):
        name = user.get_full_name() if hasattr(user, "get_full_name") else ""
        return {
            "actor_type": "user",
            "actor": user.get_username(),
            "actor_name": name,
            "org": getattr(user, "organization_id", None),
        }
    return {"actor_type": "anonymous", "actor": "", "actor_name": "", "org": None}


def json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [json_value(v) for v in value]
    return str(value)


def _values(instance) -> dict[str, Any]:
    return {f.attname: f.value_from_object(instance) for f in instance._meta.concrete_fields}


def _changes(old: dict[str, Any] | None, new: dict[str, Any], spec: Audited) -> dict[str, Any]:
    changes = {}
    for name, value in new.items():
        if name in spec.ignored or name == "id":
            continue
        before = None if old is None else old.get(name)
        if old is not None and before == value:
            continue
        if old is None and value in (None, "", [], {}):
            continue
        if spec.is_secret(name):
            changes[name] = {"old": MASK if before else None, "new": MASK if value else None}
        else:
            changes[name] = {"old": json_value(before), "new": json_value(value)}
    return changes


def _organization_of(instance, actor_org):
    org = getattr(instance, "organization_id", None)
    if org is None and getattr(instance, "workspace_id", None) is not None:
        from accounts.models import Workspace

        org = Workspace.objects.filter(pk=instance.workspace_id).values_list("organization_id", flat=True).first()
    if org is None and instance._meta.label == "accounts.Organization":
        org = instance.pk
    return org or actor_org


def _record(instance, action: str, changes: dict[str, Any], spec: Audited, request) -> None:
    actor = actor_of(request)
    organization_id = _organization_of(instance, actor.pop("org"))
    AuditEvent.objects.create(
        organization_id=organization_id,
        created_at=timezone.now(),
        source=source_of(request.path),
        resource_type=spec.resource_type,
        resource_id=str(instance.pk),
        resource_label=spec.label(instance)[:255],
        action=action,
        changes=changes,
        **actor,
    )


def command_actor(command: str | None) -> dict[str, Any]:
    """The actor of a management command: the operating system account that ran `manage.py <command>` (or the
    process, when `command` is None: a script or a shell)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry and no LOGNAME/USER (some containers)
        user = f"uid {os.getuid()}"
    name = f"manage.py {command}" if command else "outside a request (script or shell)"
    return {"source": Source.COMMAND, "actor_type": "system_user", "actor": user, "actor_name": name}


def record_cache_purge(sender, *, organization_id, model, purged, command, more, **kwargs) -> None:
    """responsecache.signals.cache_purged: a purge of the response cache (action `purge`, resource `response_cache`),
    by the management `command` that ran it, else by the current request's actor."""
    record_operation(
        organization_id=organization_id,
        resource_type="response_cache",
        resource_id=model or "",
        resource_label=model or "all entries",
        action=Action.PURGE,
        changes={"purged": purged, "model": model, **more},
        actor=command_actor(command) if command else None,
    )


def record_operation(
    *,
    organization_id,
    resource_type: str,
    action: str,
    changes: dict[str, Any],
    resource_id: str = "",
    resource_label: str = "",
    actor: dict[str, Any] | None = None,
) -> None:
    """Record a management operation that is not a model save (a purge): by `actor` (command_actor) or, by
    default, the actor of the current management request."""
    if actor is None:
        request = _request.get()
        if request is None:
            actor = command_actor(None)
        else:
            actor = {"source": source_of(request.path), **actor_of(request)}
            actor.pop("org")
    AuditEvent.objects.create(
        organization_id=organization_id,
        created_at=timezone.now(),
        resource_type=resource_type,
        resource_id=resource_id,
        resource_label=resource_label[:255],
        action=action,
        changes={name: json_value(value) for name, value in changes.items()},
        **actor,
    )


def _pre_save(sender, instance, raw=False, **kwargs) -> None:
    if raw or _request.get() is None or instance._state.adding:
        return
    names = [f.attname for f in instance._meta.concrete_fields]
    instance._audit_old = type(instance)._base_manager.filter(pk=instance.pk).values(*names).first()


def _post_save(sender, instance, created=False, raw=False, **kwargs) -> None:
    request = _request.get()
    if raw or request is None:
        return
    spec = AUDITED[sender._meta.label]
    old = None if created else getattr(instance, "_audit_old", None)
    changes = _changes(old, _values(instance), spec)
    if not created and not changes:
        return
    _record(instance, Action.CREATE if created else Action.UPDATE, changes, spec, request)


def _post_delete(sender, instance, **kwargs) -> None:
    request = _request.get()
    if request is None:
        return
    _record(instance, Action.DELETE, {}, AUDITED[sender._meta.label], request)


def connect() -> None:
    for label in AUDITED:
        model = apps.get_model(label)
        uid = f"audit:{label}"
        pre_save.connect(_pre_save, sender=model, dispatch_uid=uid + ":pre")
        post_save.connect(_post_save, sender=model, dispatch_uid=uid + ":post")
        post_delete.connect(_post_delete, sender=model, dispatch_uid=uid + ":delete")
