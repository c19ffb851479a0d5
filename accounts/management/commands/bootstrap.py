"""python manage.py bootstrap [--json]: idempotent first-run setup.

Creates the first organization, its default workspace and an admin user, loads GATEWAY_CATALOG, and on
the first run creates and prints one management key and one inference key.
"""

import json
import os

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
            admin_password = None
            if admin is None:
                admin_password = os.environ.get("GATEWAY_ADMIN_PASSWORD") or None
                admin = services.user_create(
                    organization=organization,
                    username=options["admin_username"],
                    org_role=OrgRole.ADMIN,
                    password=admin_password,
                    is_staff=True,
                    is_superuser=True,
                )
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
        }
        if options["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(f"Catalog: {summary}")
        self.stdout.write(f"Organization: {result['organization_id']}  default workspace: {result['workspace_id']}")
        self.stdout.write(
            f"Admin user: {admin.username}" + (" (password from GATEWAY_ADMIN_PASSWORD)" if admin_password else "")
        )
        if management_key:
            self.stdout.write("Keys (shown once, store them now):")
            self.stdout.write(f"  management key: {management_key}")
            self.stdout.write(f"  inference key:  {inference_key}")
        else:
            self.stdout.write("Keys already exist; create more with `python manage.py create_api_key`.")
