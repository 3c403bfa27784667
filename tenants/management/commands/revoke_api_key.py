"""``manage.py revoke_api_key <prefix>``: refuse an API key from now on."""

from django.core.management.base import BaseCommand, CommandError, CommandParser

from tenants import services
from tenants.models import TenantApiKey


class Command(BaseCommand):
    help = "Revoke an API key, named by its prefix (the part before the dot, shown in the admin)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("prefix", help="the key's prefix, e.g. Ab12Cd34")

    def handle(self, *args: object, **options: object) -> None:
        prefix = str(options["prefix"]).partition(".")[0]
        api_key = TenantApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
        if api_key is None:
            raise CommandError(f"No API key with prefix {prefix!r}; the admin lists every key with its prefix.")
        if api_key.revoked:
            self.stdout.write(f"API key {prefix} of {api_key.tenant.slug} was already revoked.")
            return
        services.api_key_revoke(api_key=api_key)
        self.stdout.write(f"Revoked API key {prefix} of {api_key.tenant.slug}: requests with it are refused from now on.")
