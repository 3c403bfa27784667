"""Memories keep their past versions as memories (``Memory.version_of``), their times within what can
be read back (a check on each time column), and the day's usage counts the refused operations.

Before the checks, a time stored out of range (before 0001-01-02 or after 9999-12-30 in UTC, which
Python cannot read back or show everywhere) is brought to the nearest bound. Then each update an
extractor recorded (a ``MemoryChange`` with a ``previous_text``, made by a model rather than by hand)
gives back the version it replaced, as a past version holding until the update's ``valid_from``.
"""

import datetime
import django.db.models.deletion
from typing import Any

from django.db import migrations, models

EARLIEST = "0001-01-02 00:00:00+00"
LATEST = "9999-12-30 23:59:59.999999+00"
# Who corrects by hand (``extraction.services.memory_correct``'s ``by``): a fix of what was recorded, not a change in the world.
BY_HAND = ("api", "mcp")


def _clamp_sql(table: str, column: str) -> str:
    return (
        f"UPDATE {table} SET {column} = LEAST(GREATEST({column}, '{EARLIEST}'::timestamptz), '{LATEST}'::timestamptz) "  # noqa: S608 - constants
        f"WHERE {column} < '{EARLIEST}'::timestamptz OR {column} > '{LATEST}'::timestamptz"
    )


REPAIR = [
    _clamp_sql(table, column)
    for table in ("extracted_memories", "extracted_memory_changes")
    for column in ("valid_from", "valid_to")
]


def past_versions_restore(apps: Any, schema_editor: Any) -> None:
    """Each extractor's update recorded so far, as the past version it replaced (oldest first)."""
    Memory = apps.get_model("extraction", "Memory")
    MemoryChange = apps.get_model("extraction", "MemoryChange")
    updated = (
        MemoryChange._base_manager.filter(action="update", previous_text__isnull=False)
        .exclude(model__in=BY_HAND)
        .exclude(model__startswith="admin:")
        .values_list("memory_id", flat=True)
        .distinct()
    )
    restored = Memory._base_manager.filter(version_of__isnull=False).values("version_of")  # a run before this one
    for memory in Memory._base_manager.filter(pk__in=list(updated), version_of__isnull=True).exclude(pk__in=restored).iterator():
        changes = list(MemoryChange._base_manager.filter(memory=memory).order_by("changed_at", "pk"))
        held_from = changes[0].valid_from if changes else memory.valid_from
        sources: list = []  # the messages read into the version that held
        confidence = memory.confidence
        for change in changes:
            by_model = change.model not in BY_HAND and not change.model.startswith("admin:")
            if (
                change.action == "update"
                and change.previous_text is not None
                and by_model
                and change.previous_text != change.text
            ):
                until = change.valid_from if change.valid_from is not None else change.changed_at
                if held_from is not None and until < held_from:
                    until = held_from
                Memory._base_manager.create(
                    tenant_id=memory.tenant_id,
                    user_id=memory.user_id,
                    kind=memory.kind,
                    subject=memory.subject,
                    text=change.previous_text,
                    valid_from=held_from,
                    valid_to=until,
                    confidence=confidence,
                    message_ids=list(dict.fromkeys(sources)),
                    conversation_pks=memory.conversation_pks,
                    model=memory.model,
                    created_at=memory.created_at,
                    updated_at=change.changed_at,
                    version_of=memory,
                )
                sources = []
            sources.extend(change.message_ids)
            held_from, confidence = change.valid_from, change.confidence


class Migration(migrations.Migration):
    dependencies = [
        ("extraction", "0004_names"),
        ("tenants", "0004_tenant_usage"),
    ]

    operations = [
        migrations.AddField(
            model_name="extractionusage",
            name="refused_operations",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="memory",
            name="version_of",
            field=models.ForeignKey(
                blank=True,
                editable=False,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="past_versions",
                to="extraction.memory",
            ),
        ),
        migrations.RunSQL(REPAIR, migrations.RunSQL.noop, elidable=False),
        migrations.RunPython(past_versions_restore, migrations.RunPython.noop, elidable=False),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("valid_from__isnull", True),
                    models.Q(
                        ("valid_from__gte", datetime.datetime(1, 1, 2, 0, 0, tzinfo=datetime.timezone.utc)),
                        ("valid_from__lte", datetime.datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc)),
                    ),
                    _connector="OR",
                ),
                name="memory_valid_from_storable",
            ),
        ),
        migrations.AddConstraint(
            model_name="memory",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("valid_to__isnull", True),
                    models.Q(
                        ("valid_to__gte", datetime.datetime(1, 1, 2, 0, 0, tzinfo=datetime.timezone.utc)),
                        ("valid_to__lte", datetime.datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc)),
                    ),
                    _connector="OR",
                ),
                name="memory_valid_to_storable",
            ),
        ),
        migrations.AddConstraint(
            model_name="memorychange",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("valid_from__isnull", True),
                    models.Q(
                        ("valid_from__gte", datetime.datetime(1, 1, 2, 0, 0, tzinfo=datetime.timezone.utc)),
                        ("valid_from__lte", datetime.datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc)),
                    ),
                    _connector="OR",
                ),
                name="memory_change_valid_from_storable",
            ),
        ),
        migrations.AddConstraint(
            model_name="memorychange",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    ("valid_to__isnull", True),
                    models.Q(
                        ("valid_to__gte", datetime.datetime(1, 1, 2, 0, 0, tzinfo=datetime.timezone.utc)),
                        ("valid_to__lte", datetime.datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=datetime.timezone.utc)),
                    ),
                    _connector="OR",
                ),
                name="memory_change_valid_to_storable",
            ),
        ),
    ]
