"""Writes of SCIM users: organization members provisioned by the identity provider.

A SCIM user is an `accounts.User` of the organization (org:member) plus a `ScimUser` row. `active: false`
marks the user inactive and disables the API keys the user created; `active: true` re-enables the keys
that deactivation disabled (not the ones an admin disabled). DELETE deactivates the same way, removes the
user from their groups (so the mappings' workspace memberships follow) and deletes the SCIM resource; the
`accounts.User` row stays, inactive, so past usage keeps its user.
"""

from __future__ import annotations

import uuid

from django.db import IntegrityError, transaction
from django.db.models.functions import Lower
from scim2_models import PatchOp, UniquenessException

from accounts import services as accounts_services
from accounts.models import ApiKey, Organization
from gateway_project.policy_cache import bump_policy_version_on_commit
from scim.models import ScimUser, check_identifier_lengths, clip
from scim.protocol.resources import UserResource, primary_email, stored_attributes, user_resource
from scim.services.membership import memberships_apply, pairs_for_user


def _check_user_name_free(organization_id: uuid.UUID, user_name: str, exclude: uuid.UUID | None = None) -> None:
    taken = ScimUser.objects.annotate(lower_name=Lower("user_name")).filter(
        organization_id=organization_id, lower_name=user_name.lower()
    )
    if exclude is not None:
        taken = taken.exclude(user_id=exclude)
    if taken.exists():
        raise UniquenessException(detail=f"userName '{user_name}' is already taken")


def _account_username(user_name: str, user_id: uuid.UUID) -> str:
    """accounts.User.username is unique across organizations: the SCIM userName plus the user's id."""
    return f"{user_name[:110]}~{user_id.hex[:12]}"


def _set_active(scim_user: ScimUser, active: bool) -> None:
    """Disable the user's API keys on deactivation; re-enable the ones it disabled on reactivation."""
    if scim_user.active and not active:
        keys = ApiKey.objects.filter(creator_id=scim_user.user_id, disabled=False)
        scim_user.disabled_key_ids = [str(k) for k in keys.values_list("id", flat=True)]
        keys.update(disabled=True)
        bump_policy_version_on_commit()
    elif not scim_user.active and active:
        ApiKey.objects.filter(id__in=scim_user.disabled_key_ids).update(disabled=False)
        scim_user.disabled_key_ids = []
        bump_policy_version_on_commit()
    scim_user.active = active


def _write(scim_user: ScimUser, resource: UserResource) -> ScimUser:
    """Store a resource on its row and on the organization member."""
    check_identifier_lengths(userName=resource.user_name, externalId=resource.external_id)
    _check_user_name_free(scim_user.organization_id, resource.user_name, exclude=scim_user.user_id)
    _set_active(scim_user, resource.active is not False)
    scim_user.user_name = resource.user_name
    scim_user.external_id = resource.external_id
    scim_user.display_name = clip(resource.display_name)
    scim_user.email = clip(primary_email(resource))
    scim_user.attributes = stored_attributes(resource)
    try:
        with transaction.atomic():
            scim_user.save()
    except IntegrityError as exc:
        raise UniquenessException(detail=f"userName '{resource.user_name}' is already taken") from exc
    user = scim_user.user
    user.username = _account_username(resource.user_name, user.id)
    user.email = (scim_user.email or "")[:254]
    user.first_name = ((resource.name and resource.name.given_name) or "")[:150]
    user.last_name = ((resource.name and resource.name.family_name) or "")[:150]
    user.is_active = scim_user.active
    user.save(update_fields=["username", "email", "first_name", "last_name", "is_active"])
    return scim_user


@transaction.atomic
def scim_user_create(*, organization_id: uuid.UUID, resource: UserResource) -> ScimUser:
    """POST /Users: a new member of the organization."""
    _check_user_name_free(organization_id, resource.user_name)
    organization = Organization.objects.get(pk=organization_id)
    user = accounts_services.user_create(
        organization=organization, username=f"scim-{uuid.uuid4().hex}", email=primary_email(resource) or ""
    )
    scim_user = ScimUser(user=user, organization=organization, user_name=resource.user_name, active=True)
    return _write(scim_user, resource)


@transaction.atomic
def scim_user_replace(*, scim_user: ScimUser, resource: UserResource, base_url: str) -> ScimUser:
    """PUT /Users/{id}: the resource replaces the stored one (immutable and read-only attributes checked)."""
    scim_user = ScimUser.objects.select_for_update().select_related("user").get(pk=scim_user.pk)
    resource.replace(user_resource(scim_user, base_url))
    return _write(scim_user, resource)


@transaction.atomic
def scim_user_patch(*, scim_user: ScimUser, patch: PatchOp, base_url: str) -> ScimUser:
    """PATCH /Users/{id}: add, remove and replace operations applied by scim2-models."""
    scim_user = ScimUser.objects.select_for_update().select_related("user").get(pk=scim_user.pk)
    resource = user_resource(scim_user, base_url)
    patch.patch(resource)
    return _write(scim_user, resource)


@transaction.atomic
def scim_user_delete(*, scim_user: ScimUser) -> None:
    """DELETE /Users/{id}: deactivate the member, leave their groups and the memberships mappings gave them."""
    scim_user = ScimUser.objects.select_for_update().select_related("user").get(pk=scim_user.pk)
    pairs = pairs_for_user(scim_user.user_id)
    _set_active(scim_user, False)
    user = scim_user.user
    user.is_active = False
    user.save(update_fields=["is_active"])
    scim_user.delete()
    memberships_apply(pairs)
