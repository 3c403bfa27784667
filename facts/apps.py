from django.apps import AppConfig


class FactsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "facts"

    def ready(self) -> None:
        from facts.models import UserFact, UserFactChange
        from tenants import usage

        # A tenant's storage counts its users' facts and their history.
        usage.storage_measure_register("facts", usage.row_bytes_per_day(UserFact, "created_at"))
        usage.storage_measure_register("fact_changes", usage.row_bytes_per_day(UserFactChange, "changed_at"))
