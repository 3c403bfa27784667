from django.apps import AppConfig
from django.core import checks


class MemoryProjectConfig(AppConfig):
    """The project itself, as an app: its deployment checks (``memoryproject.checks``)."""

    name = "memoryproject"
    verbose_name = "Conversation memory service"

    def ready(self) -> None:
        from memoryproject import checks as project_checks

        checks.register(project_checks.static_manifest, checks.Tags.staticfiles, deploy=True)
