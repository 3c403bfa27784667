from django.apps import AppConfig


class StoreConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "store"
    verbose_name = "LangGraph store"

    def ready(self) -> None:
        from store.models import StoreItem
        from tenants import usage

        # A tenant's storage counts its store items (values, indexed text and vectors).
        usage.storage_measure_register("store", usage.row_bytes_per_day(StoreItem, "created_at"))
