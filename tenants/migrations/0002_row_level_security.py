"""Row-level security on every tenant-owned table (``tenants.rls``): defence in depth beneath the
tenant-scoped managers, binding every role that neither owns the tables nor bypasses it."""

from django.db import migrations

from tenants import rls


class Migration(migrations.Migration):
    # After every app with tenant-owned tables, so that the migration state holds all of them.
    dependencies = [
        ("tenants", "0001_initial"),
        ("conversations", "0004_tombstone_conversation_key"),
        ("checkpoints", "0001_initial"),
        ("facts", "0001_initial"),
        ("search", "0001_initial"),
        ("summaries", "0001_initial"),
    ]

    operations = [migrations.RunPython(rls.enable, rls.disable, elidable=False)]
