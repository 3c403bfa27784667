"""``manage.py create_api_key --tenant <slug>``: one more API key for a tenant, printed once."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from core.exceptions import Unstorable
from tenants import services
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Create an API key for an existing tenant and print it once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="slug of the tenant")
        parser.add_argument("--name", default="default", help="a name to recognise the key by")
        parser.add_argument("--expires-in-days", type=int, default=None, help="expire the key after this many days")
        parser.add_argument("--quiet", action="store_true", help="print only the key")

    def handle(self, *args: object, **options: object) -> None:
        slug = options["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {slug!r}; create it with: manage.py create_tenant {slug}")
        days = options["expires_in_days"]
        expiry = timezone.now() + timedelta(days=days) if days else None
        try:
            api_key, key = services.api_key_create(tenant=tenant, name=str(options["name"]), expiry_date=expiry)
        except Unstorable as error:
            raise CommandError(error.message) from error
        if options["quiet"]:
            self.stdout.write(key)
            return
        self.stdout.write(f"API key {api_key.prefix} for {slug} (shown once, store it now): {key}")
