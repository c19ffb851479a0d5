"""python manage.py load_catalog FILE: upsert providers, models and endpoints from a YAML or JSON catalog."""

from django.core.management.base import BaseCommand, CommandError

from inference.catalog_loader import CatalogError, load_catalog_file


class Command(BaseCommand):
    help = "Upsert providers, models and endpoints from a catalog file (YAML or JSON) and print a summary."

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path of the catalog file")

    def handle(self, *args, **options):
        try:
            summary = load_catalog_file(options["file"])
        except FileNotFoundError as exc:
            raise CommandError(f"catalog file not found: {options['file']}") from exc
        except CatalogError as exc:
            raise CommandError(f"invalid catalog: {exc}") from exc
        self.stdout.write(f"Loaded {summary}")
