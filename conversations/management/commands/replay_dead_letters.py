"""``manage.py replay_dead_letters [--tenant <slug>] [--id N ...] [--all]``: publish failed tasks again."""

from django.core.management.base import BaseCommand, CommandError, CommandParser

from conversations import services
from conversations.models import DeadLetter
from core.exceptions import ServiceUnavailable
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Replay dead letters (tasks that failed for good) once their cause is fixed. Replays are idempotent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant's dead letters")
        parser.add_argument("--id", type=int, action="append", dest="ids", help="only this dead letter (repeatable)")
        parser.add_argument("--include-replayed", action="store_true", help="replay ones already replayed too")

    def handle(self, *args: object, **options: object) -> None:
        dead_letters = DeadLetter.unscoped.order_by("pk")  # operator command across tenants
        if options["tenant"]:
            tenant = Tenant.objects.filter(slug=options["tenant"]).first()
            if tenant is None:
                raise CommandError(f"No tenant {options['tenant']!r}.")
            dead_letters = DeadLetter.objects.for_tenant(tenant).order_by("pk")
        if options["ids"]:
            dead_letters = dead_letters.filter(pk__in=options["ids"])
        if not options["include_replayed"]:
            dead_letters = dead_letters.filter(replayed_at__isnull=True)
        replayed = 0
        for dead_letter in dead_letters:
            try:
                services.dead_letter_replay(dead_letter=dead_letter)
            except ServiceUnavailable as error:
                raise CommandError(f"replayed {replayed}; stopped: {error.message}") from error
            replayed += 1
        self.stdout.write(self.style.SUCCESS(f"replay_dead_letters: {replayed} replayed"))
