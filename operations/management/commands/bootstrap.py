"""python manage.py bootstrap [--json]: idempotent first-run setup.

It sets up the whole gateway (accounts and the inference catalog), so it lives in operations/, above both
(accounts does not import inference; docs/architecture.md).

Creates the first organization, its default workspace and an admin user, adds the entries of GATEWAY_CATALOG
the database lacks (never overwriting what staff changed in the admin), and on the first run creates and prints
one management key and one inference key. An admin user without a usable password gets GATEWAY_ADMIN_PASSWORD,
or a generated password printed once next to the keys.
"""

import json
import os
import secrets

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts import services
from accounts.models import ApiKey, Organization, OrgRole, User
from inference.catalog_loader import CatalogError, load_catalog_file


class Command(BaseCommand):
    help = "Create the first organization, workspace, admin user and keys (once) and load the catalog."

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print the result as one JSON object")
        parser.add_argument("--organization-name", default="Default organization")
        parser.add_argument("--admin-username", default=os.environ.get("GATEWAY_ADMIN_USERNAME", "admin"))

    def handle(self, *args, **options):
        try:
            summary = load_catalog_file(settings.GATEWAY_CATALOG)
        except (FileNotFoundError, CatalogError) as exc:
            raise CommandError(f"cannot load catalog {settings.GATEWAY_CATALOG}: {exc}") from exc
        with transaction.atomic():
            organization = Organization.objects.order_by("created_at").first()
            if organization is None:
                organization = services.organization_create(name=options["organization_name"])
            admin = User.objects.filter(username=options["admin_username"]).first()
            if admin is None:
                admin = services.user_create(
                    organization=organization,
                    username=options["admin_username"],
                    org_role=OrgRole.ADMIN,
                    is_staff=True,
                    is_superuser=True,
                )
            password_source, generated_password = _give_admin_a_password(admin)
            management_key = inference_key = None
            if not ApiKey.objects.filter(organization=organization).exists():
                management_key = services.api_key_create(
                    organization=organization, name="bootstrap management key", creator=admin, is_management=True
                ).raw_key
                inference_key = services.api_key_create(
                    organization=organization, name="bootstrap inference key", creator=admin
                ).raw_key
        result = {
            "organization_id": str(organization.id),
            "workspace_id": str(organization.default_workspace_id) if organization.default_workspace_id else None,
            "management_key": management_key,
            "inference_key": inference_key,
            "admin_username": admin.username,
            "admin_password": generated_password,
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(f"Catalog: {summary}")
        self.stdout.write(f"Organization: {result['organization_id']}  default workspace: {result['workspace_id']}")
        self.stdout.write(f"Admin user: {admin.username} ({password_source})")
        if generated_password:
            self.stdout.write(f"  admin password: {generated_password}  (shown once, store it now)")
        if management_key:
            self.stdout.write("Keys (shown once, store them now):")
            self.stdout.write(f"  management key: {management_key}")
            self.stdout.write(f"  inference key:  {inference_key}")
        else:
            self.stdout.write("Keys already exist; create more with `python manage.py create_api_key`.")


def _give_admin_a_password(admin: User) -> tuple[str, str | None]:
    """A password for an admin user that has none: GATEWAY_ADMIN_PASSWORD, else a generated one (returned, to be
    printed once). A user that has a password keeps it (change it with `manage.py changepassword`)."""
    if admin.has_usable_password():
        return (
            "its password was set on an earlier run and shown then; "
            f"reset it with `python manage.py changepassword {admin.username}`"
        ), None
    from_env = os.environ.get("GATEWAY_ADMIN_PASSWORD") or ""
    password = from_env or secrets.token_urlsafe(18)
    admin.set_password(password)
    admin.save(update_fields=["password"])
    if from_env:
        return "password set from GATEWAY_ADMIN_PASSWORD", None
    return "password generated", password
