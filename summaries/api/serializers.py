"""Input validation and output shapes of the summaries API."""

from rest_framework import serializers

from conversations.api.serializers import check_page_size

DEFAULT_PAGE_SIZE = 20


class SummaryListQuerySerializer(serializers.Serializer):
    limit = serializers.IntegerField(
        required=False, min_value=1, help_text=f"Default {DEFAULT_PAGE_SIZE}, at most MEMORY_MAX_PAGE_SIZE."
    )

    def validate_limit(self, value: int) -> int:
        return check_page_size(value, field="limit")


# --- Output (the views answer with plain dicts of these shapes) -------------------------------------


class SummaryOutSerializer(serializers.Serializer):
    text = serializers.CharField()
    model = serializers.CharField(help_text='The chat model that wrote it, or "rule_based".')
    message_count = serializers.IntegerField(help_text="Messages summarised.")
    pair_count = serializers.IntegerField(help_text="The conversation's message pairs (user messages) when it was due.")
    first_seq = serializers.IntegerField(help_text="Seq of the first message summarised.")
    last_seq = serializers.IntegerField(help_text="Seq of the last message summarised.")
    token_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class SummaryListOutSerializer(serializers.Serializer):
    conversation_id = serializers.CharField()
    summaries = SummaryOutSerializer(many=True, help_text="Newest first.")


class SummaryCreatedOutSerializer(SummaryOutSerializer):
    conversation_id = serializers.CharField()
