from django.apps import AppConfig


class CheckpointsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "checkpoints"
