"""Fail-closed tenant scoping for every tenant-owned model.

The default manager ``objects`` refuses to query without a tenant: ``Model.objects.for_tenant(t)``
is the only way in. ``Model.unscoped`` serves the admin, migrations and cross-tenant maintenance;
every use of it carries a comment saying why.
"""

from typing import Any

from django.db import models


class TenantScopeError(RuntimeError):
    """A tenant-owned model was queried without a tenant."""


class TenantQuerySet(models.QuerySet):
    def for_tenant(self, tenant: Any) -> "TenantQuerySet":
        if tenant is None:
            raise TenantScopeError(f"{self.model.__name__} queried with tenant=None.")
        clone = self._chain()
        tenant_id = tenant if isinstance(tenant, int) else tenant.pk
        clone._tenant_scoped = True
        clone._tenant_id = tenant_id
        return clone.filter(tenant_id=tenant_id)

    def _clone(self) -> "TenantQuerySet":
        # Every copy goes through _clone (chained calls, and callers such as the admin that clone).
        clone = super()._clone()
        clone._tenant_scoped = getattr(self, "_tenant_scoped", False)
        clone._tenant_id = getattr(self, "_tenant_id", None)
        return clone

    def _fetch_all(self) -> None:
        self._require_scope()
        super()._fetch_all()

    def _require_scope(self) -> None:
        if not getattr(self, "_tenant_scoped", False):
            raise TenantScopeError(
                f"{self.model.__name__}.objects must be scoped with .for_tenant(tenant) before it is "
                f"queried; use {self.model.__name__}.unscoped only in admin or maintenance code."
            )

    # Every terminal operation that does not go through _fetch_all checks the scope too.
    def count(self) -> int:
        self._require_scope()
        return super().count()

    def exists(self) -> bool:
        self._require_scope()
        return super().exists()

    def aggregate(self, *args: Any, **kwargs: Any) -> dict:
        self._require_scope()
        return super().aggregate(*args, **kwargs)

    def update(self, **kwargs: Any) -> int:
        self._require_scope()
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        self._require_scope()
        return super().delete()

    def iterator(self, chunk_size: int | None = None):  # noqa: ANN201
        self._require_scope()
        return super().iterator(chunk_size=chunk_size)

    def aiterator(self, chunk_size: int = 2000):  # noqa: ANN201
        self._require_scope()
        return super().aiterator(chunk_size=chunk_size)

    def _merge_sanity_check(self, other: models.QuerySet) -> None:
        super()._merge_sanity_check(other)
        self._require_same_scope(other)

    def _combinator_query(self, combinator: str, *other_qs: models.QuerySet, all: bool = False) -> "TenantQuerySet":  # noqa: A002
        for other in other_qs:
            self._require_same_scope(other)
        return super()._combinator_query(combinator, *other_qs, all=all)

    def _require_same_scope(self, other: models.QuerySet) -> None:
        """``scoped | unscoped`` would drop the tenant filter: both sides must be scoped."""
        self._require_scope()
        if not getattr(other, "_tenant_scoped", False) or getattr(other, "_tenant_id", None) != getattr(self, "_tenant_id", None):
            raise TenantScopeError(
                f"{self.model.__name__}: a scoped queryset can only be combined with one scoped to the same tenant."
            )

    def get(self, *args: Any, **kwargs: Any) -> Any:
        self._require_scope()
        return super().get(*args, **kwargs)


class TenantManager(models.Manager.from_queryset(TenantQuerySet)):
    """Default manager: refuses unscoped queries."""


class UnscopedManager(models.Manager):
    """Escape hatch for admin, migrations and maintenance. Grep for ``.unscoped`` to audit."""
