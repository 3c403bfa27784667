"""``manage.py rebuild_cache --tenant <slug> [--conversation <id>] [--async]``:
rebuild the message lists and memory documents of a tenant."""

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from conversations import services
from conversations.models import Conversation
from conversations.services import publish
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Rebuild the Redis cache (message list and memory document) of every active conversation of a "
        "tenant, or of the conversations named, merging writes still pending. Exits 1 if any failed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="slug of the tenant")
        parser.add_argument("--conversation", action="append", dest="conversations", help="only this conversation (repeatable)")
        parser.add_argument("--async", action="store_true", dest="fan_out", help="queue one Celery task per conversation instead")

    def handle(self, *args: object, **options: object) -> None:
        slug = options["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            known = ", ".join(Tenant.objects.values_list("slug", flat=True)[:20]) or "none yet"
            raise CommandError(f"No tenant {slug!r} (known tenants: {known}).")
        conversation_ids = options["conversations"]
        scoped = Conversation.objects.for_tenant(tenant)
        if conversation_ids:
            missing = set(conversation_ids) - set(
                scoped.filter(conversation_id__in=conversation_ids).values_list("conversation_id", flat=True)
            )
            if missing:
                raise CommandError(f"Tenant {slug} has no conversation {', '.join(sorted(missing))}.")
            total = len(conversation_ids)
        else:
            total = scoped.filter(archived=False).count()
        if options["fan_out"]:
            ids = conversation_ids or list(scoped.filter(archived=False).values_list("conversation_id", flat=True))
            for conversation_id in tqdm(ids, desc=f"queueing {slug}", unit="conv", disable=None):
                publish.publish_args(publish.CACHE_REBUILD, tenant.pk, conversation_id)
            self.stdout.write(f"rebuild_cache {slug}: {len(ids)} conversations queued")
            return
        with tqdm(total=total, desc=f"rebuilding {slug}", unit="conv", disable=None) as bar:
            summary = services.tenant_cache_rebuild(tenant=tenant, conversation_ids=conversation_ids, progress=bar.update)
        line = f"rebuild_cache {slug}: {summary.conversations} conversations, {summary.messages} messages cached, {summary.seconds:.2f} s"
        if summary.failed:
            raise CommandError(f"{line}; {len(summary.failed)} failed: {', '.join(summary.failed[:10])}")
        self.stdout.write(self.style.SUCCESS(line))
