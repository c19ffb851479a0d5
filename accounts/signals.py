"""Cached-policy invalidation for the accounts models read by the data plane."""

from accounts.models import ApiKey, Organization, User, Workspace, WorkspaceMember
from gateway_project.policy_cache import watch_models

watch_models(ApiKey, Workspace, WorkspaceMember, Organization, User)
