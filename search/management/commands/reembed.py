"""``manage.py reembed --tenant <slug> [--model <name>] [--conversation <id>] [--reindex]``: compute a
tenant's message vectors under a model, then make it the tenant's model and drop the other model's
vectors; with ``--reindex``, embed every message again under the tenant's own model (after a change of
what a message is embedded as), searches reading the old vectors until the new ones replace them all
in one commit."""

from collections.abc import Callable

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from search import embeddings, services
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Embed every searchable message of a tenant under an embedding model (default: the tenant's current "
        "one, to fill gaps). With another model, search keeps using the old vectors until all new ones exist; "
        "then the tenant switches to the new model and the old vectors are removed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", required=True, help="slug of the tenant")
        parser.add_argument("--model", help=f"embedding model: {', '.join(embeddings.MODELS)} or package.module:factory")
        parser.add_argument("--conversation", help="only this conversation (the tenant's model does not change)")
        parser.add_argument(
            "--reindex",
            action="store_true",
            help="embed every message again under the tenant's model, replacing its vectors in one commit at the end "
            "(the service keeps running; searches read the old vectors until then)",
        )

    def handle(self, *args: object, **options: object) -> None:
        slug = options["tenant"]
        tenant = Tenant.objects.filter(slug=slug).first()
        if tenant is None:
            known = ", ".join(Tenant.objects.values_list("slug", flat=True)[:20]) or "none yet"
            raise CommandError(f"No tenant {slug!r} (known tenants: {known}).")
        if options["reindex"]:
            if options["model"] or options["conversation"]:
                raise CommandError(
                    "--reindex re-embeds the whole tenant under its own model: leave out --model and --conversation."
                )
            self._reindex(tenant)
            return
        model = options["model"] or tenant.setting("MEMORY_EMBEDDING_MODEL")
        if not model:
            raise CommandError(f"Tenant {slug} has embeddings turned off (MEMORY_EMBEDDING_MODEL is empty): pass --model.")
        try:
            embeddings.model_spec(model)
        except embeddings.EmbeddingModelError as error:
            raise CommandError(str(error)) from error
        conversation_id = options["conversation"]
        summary = self._embedding(
            f"embedding {slug} with {model}",
            services.reembed_pending_count(tenant=tenant, model=model, conversation_id=conversation_id),
            lambda progress: services.tenant_reembed(
                tenant=tenant, model=model, conversation_id=conversation_id, progress=progress
            ),
            failed="Nothing was switched; vectors already written are kept and reused on the next run.",
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"reembed {slug}: {summary.embedded} messages embedded with {summary.model}, "
                f"{summary.removed} vectors of other models removed, {summary.seconds:.2f} s"
            )
        )

    def _reindex(self, tenant: Tenant) -> None:
        summary = self._embedding(
            f"re-indexing {tenant.slug}",
            services.reindex_pending_count(tenant=tenant),
            lambda progress: services.tenant_reindex(tenant=tenant, progress=progress),
            failed="Searches still read the old vectors; the new ones written so far are kept and reused on the next run.",
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"reindex {tenant.slug}: {summary.embedded} messages embedded again with {summary.model}, "
                f"{summary.removed} old vectors replaced, {summary.seconds:.2f} s"
            )
        )

    @staticmethod
    def _embedding(
        description: str, total: int, run: Callable[[Callable[[int], object]], services.ReembedSummary], *, failed: str
    ) -> services.ReembedSummary:
        """``run`` with a progress bar of ``total`` messages; a model that fails is a CommandError saying ``failed``."""
        try:
            with tqdm(total=total, desc=description, unit="msg", disable=None) as bar:
                return run(bar.update)
        except embeddings.EmbeddingModelError as error:
            raise CommandError(f"{error} {failed}") from error
