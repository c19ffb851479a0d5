"""Which models are audited, under which resource names, and which of their fields are secret or ignored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SECRET_WORDS = ("password", "secret", "ciphertext", "private", "token")


@dataclass(frozen=True)
class Audited:
    resource_type: str
    ignored: frozenset[str] = field(default_factory=frozenset)  # bookkeeping fields whose change is no event
    secret: frozenset[str] = field(default_factory=frozenset)  # masked besides the names is_secret recognizes
    label: Callable[[Any], str] = str  # the record's resource_label

    def is_secret(self, field_name: str) -> bool:
        return field_name in self.secret or is_secret(field_name)


TIMESTAMPS = frozenset({"created_at", "updated_at"})

AUDITED: dict[str, Audited] = {
    "accounts.Organization": Audited("organization", TIMESTAMPS),
    "accounts.User": Audited("user", TIMESTAMPS | {"last_login"}),
    "accounts.Workspace": Audited("workspace", TIMESTAMPS),
    "accounts.WorkspaceMember": Audited("workspace_member", TIMESTAMPS),
    "accounts.ApiKey": Audited("api_key", TIMESTAMPS | {"last_used_at"}),
    "guardrails.Guardrail": Audited("guardrail", TIMESTAMPS),
    "guardrails.GuardrailKeyAssignment": Audited("guardrail_key_assignment", TIMESTAMPS),
    "guardrails.GuardrailMemberAssignment": Audited("guardrail_member_assignment", TIMESTAMPS),
    "presets.Preset": Audited("preset", TIMESTAMPS),
    "presets.PresetVersion": Audited("preset_version", TIMESTAMPS),
    "observability.Destination": Audited("observability_destination", TIMESTAMPS),
    # `label` is the key's masked form (sk-...abcd): not kept once the credential is deleted
    "byok.ProviderCredential": Audited(
        "byok_credential",
        TIMESTAMPS | {"last_used_at"},
        secret=frozenset({"label"}),
        label=lambda credential: f"{credential.provider} {credential.name}",
    ),
    "scim.ScimUser": Audited("scim_user", TIMESTAMPS),
    "scim.ScimGroup": Audited("scim_group", TIMESTAMPS),
    "scim.ScimGroupMember": Audited("scim_group_member", TIMESTAMPS),
    "scim.GroupMapping": Audited("scim_group_mapping", TIMESTAMPS),
    "scim.MembershipGrant": Audited("scim_membership_grant", TIMESTAMPS),
    "budgets.WorkspaceBudget": Audited("workspace_budget", TIMESTAMPS),
    "inference.Provider": Audited("provider", TIMESTAMPS),
    "inference.Model": Audited("model", TIMESTAMPS),
    "inference.Endpoint": Audited("endpoint", TIMESTAMPS),
}


def is_secret(field_name: str) -> bool:
    name = field_name.lower()
    return not name.endswith("_env") and any(word in name for word in SECRET_WORDS)
