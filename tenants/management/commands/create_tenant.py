"""``manage.py create_tenant <slug>``: a new tenant and its first API key, printed once."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core.exceptions import Unstorable
from tenants import services
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Create a tenant and print its first API key (shown once; only its hash is stored)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="lowercase letters, digits and hyphens, e.g. acme")
        parser.add_argument("--name", default="", help="display name (defaults to the slug)")
        parser.add_argument("--key-name", default="default", help="name of the first API key")
        parser.add_argument("--quiet", action="store_true", help="print only the key")

    def handle(self, *args: object, **options: object) -> None:
        slug = str(options["slug"])
        if Tenant.objects.filter(slug=slug).exists():
            raise CommandError(f"Tenant {slug!r} already exists; add a key with: manage.py create_api_key --tenant {slug}")
        try:
            with transaction.atomic():  # a tenant and its first key, or neither
                tenant = services.tenant_create(slug=slug, name=str(options["name"]))
                _, key = services.api_key_create(tenant=tenant, name=str(options["key_name"]))
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        except Unstorable as error:
            raise CommandError(error.message) from error
        if options["quiet"]:
            self.stdout.write(key)
            return
        self.stdout.write(self.style.SUCCESS(f"Tenant {slug} created."))
        self.stdout.write(f"API key (shown once, store it now): {key}")
