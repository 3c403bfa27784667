"""``manage.py broker_queues_migrate``: give the persist and derived queues the type
``MEMORY_QUEUE_TYPE`` asks for, moving the messages of a queue declared with the other type."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from kombu import Connection

from conversations.services import queues


class Command(BaseCommand):
    help = (
        "Give the persist and derived queues the type of MEMORY_QUEUE_TYPE. A queue of the other type "
        "has its messages moved (confirmed) to a holding queue, is deleted, declared again, and gets "
        "them back. Stop the web processes and the workers first. Exits 1 if a queue could not be migrated."
    )

    def handle(self, *args: object, **options: object) -> None:
        if not settings.CELERY_BROKER_URL.startswith(("amqp", "pyamqp")):
            raise CommandError("Queue types are a RabbitMQ feature: this broker has none to migrate.")
        broker = Connection(settings.CELERY_BROKER_URL)
        done = []
        for queue in queues.configured_queues():
            try:
                migration = queues.queue_migrate(
                    queue=queue,
                    host=broker.host,
                    userid=broker.userid,
                    password=broker.password,
                    virtual_host=broker.virtual_host,
                )
            except (RuntimeError, OSError) as error:
                raise CommandError(f"{queue.name}: {error}") from error
            state = "declared anew" if migration.created else "already of that type"
            done.append(f"{queue.name} {state}, {migration.moved} messages moved")
        self.stdout.write(self.style.SUCCESS(f"broker_queues_migrate ({settings.MEMORY_QUEUE_TYPE}): {'; '.join(done)}"))
