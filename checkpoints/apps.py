from django.apps import AppConfig


class CheckpointsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "checkpoints"

    def ready(self) -> None:
        from checkpoints.models import Checkpoint, CheckpointWrite
        from tenants import usage

        # A tenant's storage counts its checkpoints and their pending writes (dated by their checkpoint).
        usage.storage_measure_register("checkpoints", usage.row_bytes_per_day(Checkpoint, "created_at"))
        usage.storage_measure_register("checkpoint_writes", usage.row_bytes_per_day(CheckpointWrite, "checkpoint__created_at"))
