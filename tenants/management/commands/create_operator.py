"""``manage.py create_operator <username> --tenant <slug>``: a staff user for one tenant's admin."""

import getpass

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import IntegrityError

from core.exceptions import Unstorable
from tenants import services
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Create a staff user bound to one tenant: in the admin they see and act on that tenant's "
        "conversations, API keys and dead letters only. Asks for the password unless --password is given."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--tenant", required=True, help="slug of the tenant")
        parser.add_argument("--email", default="")
        parser.add_argument("--password", help="the password (prompted for when omitted)")

    def handle(self, *args: object, **options: object) -> None:
        slug = options["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            raise CommandError(f"No tenant {slug!r}; create it with: manage.py create_tenant {slug}")
        password = options["password"] or getpass.getpass(f"Password for {options['username']}: ")
        try:
            services.operator_create(
                tenant=tenant, username=str(options["username"]), password=str(password), email=str(options["email"])
            )
        except Unstorable as error:
            raise CommandError(error.message) from error
        except IntegrityError as error:
            raise CommandError(f"A user named {options['username']!r} already exists; choose another name.") from error
        self.stdout.write(f"Operator {options['username']} created for tenant {slug}; log in at /{settings.ADMIN_PATH}")
