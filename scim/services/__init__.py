"""Writes of the scim app (`<entity>_<verb>`, keyword-only, each one transaction)."""

from scim.services.groups import scim_group_create, scim_group_delete, scim_group_patch, scim_group_replace
from scim.services.mappings import group_mapping_create, group_mapping_delete, group_mapping_update
from scim.services.users import scim_user_create, scim_user_delete, scim_user_patch, scim_user_replace

__all__ = [
    "group_mapping_create",
    "group_mapping_delete",
    "group_mapping_update",
    "scim_group_create",
    "scim_group_delete",
    "scim_group_patch",
    "scim_group_replace",
    "scim_user_create",
    "scim_user_delete",
    "scim_user_patch",
    "scim_user_replace",
]
