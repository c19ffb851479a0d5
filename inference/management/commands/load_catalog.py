"""python manage.py load_catalog FILE [--update]: add the providers, models and endpoints of a YAML or JSON catalog
that the database lacks; with --update, also overwrite existing ones with the file's values."""

from django.core.management.base import BaseCommand, CommandError

from inference.catalog_loader import CatalogError, load_catalog_file


class Command(BaseCommand):
    help = (
        "Add the providers, models and endpoints of a catalog file (YAML or JSON) missing from the database "
        "(--update: overwrite existing ones too) and print a summary."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path of the catalog file")
        parser.add_argument(
            "--update", action="store_true", help="Overwrite existing entries (and changes made in the admin)"
        )

    def handle(self, *args, **options):
        try:
            summary = load_catalog_file(options["file"], update=options["update"])
        except FileNotFoundError as exc:
            raise CommandError(f"catalog file not found: {options['file']}") from exc
        except CatalogError as exc:
            raise CommandError(f"invalid catalog: {exc}") from exc
        self.stdout.write(f"Loaded {summary}")
