from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        from chat import llm
        from tenants.models import setting_check_register

        setting_check_register("MEMORY_CHAT_MODEL", llm.tenant_choice_refusal(llm.parse_spec))
        setting_check_register("MEMORY_CHAT_BASE_URL", llm.tenant_choice_refusal(llm.validate_base_url))
