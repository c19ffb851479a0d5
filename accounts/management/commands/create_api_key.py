"""python manage.py create_api_key --name NAME [--management] [--workspace ID_OR_SLUG] [--json]."""

import json

from django.core.management.base import BaseCommand, CommandError

from accounts import services
from accounts.models import Organization
from accounts.selectors import workspace_get
from gateway_project.api.errors import GatewayError


class Command(BaseCommand):
    help = "Create an API key and print the raw key once."

    def add_arguments(self, parser):
        parser.add_argument("--name", required=True)
        parser.add_argument("--management", action="store_true", help="Create a management key")
        parser.add_argument("--workspace", help="Workspace uuid or slug (default: the organization's default)")
        parser.add_argument("--organization", help="Organization id (default: the first organization)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        organizations = Organization.objects.order_by("created_at")
        organization = (
            organizations.filter(pk=options["organization"]).first()
            if options["organization"]
            else organizations.first()
        )
        if organization is None:
            raise CommandError("no organization: run `python manage.py bootstrap` first")
        workspace = None
        if options["workspace"]:
            try:
                workspace = workspace_get(organization_id=organization.id, id_or_slug=options["workspace"])
            except GatewayError as exc:
                raise CommandError(f"workspace '{options['workspace']}' not found") from exc
        try:
            created = services.api_key_create(
                organization=organization,
                name=options["name"],
                workspace=workspace,
                is_management=options["management"],
            )
        except GatewayError as exc:
            raise CommandError(exc.message) from exc
        key = created.api_key
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "key": created.raw_key,
                        "hash": key.hash,
                        "workspace_id": str(key.workspace_id),
                        "is_management_key": key.is_management,
                    }
                )
            )
        else:
            kind = "management" if key.is_management else "inference"
            self.stdout.write(f"Created {kind} key '{key.name}' (hash {key.hash}). Store it now, it is shown once:")
            self.stdout.write(created.raw_key)
