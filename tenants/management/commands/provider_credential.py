"""``manage.py provider_credential --tenant <slug> --provider <name>``: store a tenant's API key for a
chat model provider, encrypted; ``--delete`` removes it, ``--list`` shows what a tenant has stored,
``--rotate`` encrypts every stored credential again with the first of ``MEMORY_CREDENTIAL_KEYS``.

The key is read from standard input (one line), or asked for without echo on a terminal: never from
the command line, which other users of the machine can read in ``ps``. Nothing prints it back; the
output names its hint, the last four characters.
"""

import getpass
import sys

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core.exceptions import Unstorable
from tenants import services
from tenants.models import ProviderCredential, Tenant, provider_name
from tenants.secrets import SecretUnreadable


class Command(BaseCommand):
    help = (
        "Store a tenant's API key for a chat model provider (read from standard input, or asked for on a "
        "terminal), delete it (--delete), list a tenant's credentials (--list) or encrypt every credential "
        "again with the first of MEMORY_CREDENTIAL_KEYS (--rotate)."
    )
    stealth_options = ("stdin",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="slug of the tenant")
        parser.add_argument("--provider", help="the provider of MEMORY_CHAT_MODEL, e.g. openai")
        actions = parser.add_mutually_exclusive_group()
        actions.add_argument("--delete", action="store_true", help="delete the tenant's credential for the provider")
        actions.add_argument("--list", action="store_true", help="list the tenant's credentials (provider and hint)")
        actions.add_argument("--rotate", action="store_true", help="encrypt every tenant's credentials again with the first key")

    def handle(self, *args: object, **options: object) -> None:
        self.stdin = options.get("stdin") or sys.stdin
        if options["rotate"]:
            if options["tenant"] or options["provider"]:
                raise CommandError("--rotate encrypts every tenant's credentials again; run it without --tenant and --provider.")
            self.rotate()
            return
        tenant = self.tenant(options["tenant"])
        if options["list"]:
            self.list_credentials(tenant)
            return
        if not str(options["provider"] or "").strip():
            raise CommandError("Name the provider with --provider, e.g. --provider openai (see MEMORY_CHAT_MODEL).")
        try:
            provider = provider_name(str(options["provider"]))
        except ValueError as error:
            raise CommandError(str(error)) from error
        if options["delete"]:
            self.delete(tenant, provider)
        else:
            self.store(tenant, provider)

    def tenant(self, slug: object) -> Tenant:
        if not slug:
            raise CommandError("Name the tenant with --tenant <slug> (only --rotate applies to every tenant).")
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {slug!r}; create it with: manage.py create_tenant {slug}")
        return tenant

    def store(self, tenant: Tenant, provider: str) -> None:
        secret = self.read_secret(tenant, provider)
        if not secret:
            raise CommandError(
                f"No API key given for {provider}; pipe it on standard input (one line), "
                f"e.g. manage.py provider_credential --tenant {tenant.slug} --provider {provider} < key.txt"
            )
        try:
            credential = services.provider_credential_set(tenant=tenant, provider=provider, secret=secret)
        except ValidationError as error:
            raise CommandError(" ".join(error.messages)) from error
        except Unstorable as error:
            raise CommandError(error.message) from error
        self.stdout.write(f"Stored the {credential.provider} credential of {tenant.slug} ({credential.hint}).")

    def read_secret(self, tenant: Tenant, provider: str) -> str:
        if hasattr(self.stdin, "isatty") and self.stdin.isatty():
            return getpass.getpass(f"API key of {tenant.slug} for {provider} (not echoed): ").strip()
        return self.stdin.readline().strip()

    def delete(self, tenant: Tenant, provider: str) -> None:
        if services.provider_credential_delete(tenant=tenant, provider=provider):
            self.stdout.write(f"Deleted the {provider} credential of {tenant.slug}.")
        else:
            self.stdout.write(f"{tenant.slug} had no {provider} credential; nothing deleted.")

    def list_credentials(self, tenant: Tenant) -> None:
        credentials = ProviderCredential.objects.for_tenant(tenant).order_by("provider")
        if not credentials:
            self.stdout.write(
                f"{tenant.slug} has no provider credential; store one with: "
                f"manage.py provider_credential --tenant {tenant.slug} --provider <name>"
            )
            return
        for credential in credentials:
            self.stdout.write(f"{credential.provider} {credential.hint}")

    def rotate(self) -> None:
        try:
            with transaction.atomic():  # all or none: a key that cannot read one credential changes nothing
                count = services.provider_credentials_rotate()
        except SecretUnreadable as error:
            raise CommandError(f"{error} Nothing was re-encrypted; run --rotate again once the key is back.") from error
        noun = "credential" if count == 1 else "credentials"
        self.stdout.write(f"Encrypted {count} {noun} again with the first of MEMORY_CREDENTIAL_KEYS.")
