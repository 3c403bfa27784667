"""User facts (the memory bundle's ``memories``): key/value facts per tenant and user, and their change history.

A ``UserFact`` is the current value of one key of one user. The same ``user_id`` string in two
tenants names two different users. Every change of a value and every deletion adds a
``UserFactChange``, so a superseded value is never lost; setting the value a fact already holds
changes nothing. The history is keyed by the fact's key, not by its row, so it outlives a deleted
fact (only ``services.user_facts_erase`` removes it). ``token_count`` counts the fact as it is
rendered for a prompt, ``"key: value"``. Tenant-owned models refuse unscoped queries
(``tenants.managers``).
"""

from django.db import models
from django.utils import timezone

from tenants.managers import TenantManager, UnscopedManager
from tenants.models import Tenant


class UserFact(models.Model):
    # No index of its own: the unique constraint's index starts with the tenant.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    value = models.TextField()
    token_count = models.PositiveIntegerField(default=0)
    # Set by the services, not auto_now: the facts and history rows of one write share one instant.
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "user_facts"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "user_id", "key"], name="user_fact_unique_key"),
        ]
        indexes = [
            # A user's facts, most recently updated first (the list and the prompt context).
            models.Index(fields=["tenant", "user_id", "-updated_at"], name="user_fact_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.key}"


class FactAction(models.TextChoices):
    SET = "set"
    DELETE = "delete"


class UserFactChange(models.Model):
    # No index of its own: the history index starts with the tenant.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_id = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    # The value this change set; "" for a deletion.
    value = models.TextField(blank=True, default="")
    # The value it superseded; null when the fact did not exist before.
    previous_value = models.TextField(null=True, blank=True)  # noqa: DJ001 - null is "no previous value", unlike any value
    action = models.CharField(max_length=8, choices=FactAction.choices)
    changed_at = models.DateTimeField(default=timezone.now)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "user_fact_changes"
        indexes = [
            # One key's history newest first; its prefix (tenant, user_id) finds a user's whole history and its erase.
            models.Index(fields=["tenant", "user_id", "key", "-changed_at"], name="user_fact_change_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.action} {self.key}"
