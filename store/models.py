"""Items of LangGraph's long-term memory store (``BaseStore``): one JSON object per namespace and key.

A namespace is a tuple of labels, stored as a PostgreSQL text array so that prefix and suffix
matches, and the truncation of ``list_namespaces(max_depth=)``, compare whole labels (never a
dotted string split again). ``(tenant, namespace, key)`` is unique: a put is an upsert, which keeps
the row (its id, hence its place in an unranked search, and its ``created_at``).

``indexed_text`` is what search ranks the item by ("" when the item is not indexed), made from the
whole value or the field paths ``index_paths`` (kept, so that an edit re-indexes alike), with its token
count for BM25 and its vector (unit float32, little-endian) under ``embedding_model``. ``ttl_minutes``
is the item's time to live, counted again from each write and each read that refreshes it;
``expires_at`` is when it ends (null: never). An expired item is never answered, and is deleted by
the sweep (``services.store_sweep``). Tenant-owned: the default manager refuses unscoped queries
(``tenants.managers``).
"""

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from core.jsonb import JsonbEncoder
from tenants.managers import TenantManager, UnscopedManager
from tenants.models import Tenant


class StoreItem(models.Model):
    # No index of its own: the unique constraint's index starts with the tenant.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    namespace = ArrayField(models.TextField())
    key = models.TextField()
    value = models.JSONField(encoder=JsonbEncoder)  # floats come back floats (core.jsonb)
    # How the item was indexed when put: not at all, the whole value (no paths), or these paths.
    indexed = models.BooleanField(default=True)
    index_paths = ArrayField(models.TextField(), null=True, blank=True)
    indexed_text = models.TextField(blank=True, default="")
    token_count = models.PositiveIntegerField(default=0)
    embedding = models.BinaryField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    ttl_minutes = models.FloatField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "store_items"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "namespace", "key"], name="store_item_unique_key"),
        ]
        indexes = [
            # The sweep: a tenant's items that expire, soonest first.
            models.Index(fields=["tenant", "expires_at"], name="store_item_expiry", condition=models.Q(expires_at__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{'/'.join(self.namespace)}: {self.key}"
