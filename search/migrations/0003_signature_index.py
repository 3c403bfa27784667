"""The index a search checks its kept vectors against: (conversation, model, id), read alone for each
conversation's number of vectors and highest id (``search.vectors``). It replaces ``embedding_newest``
(conversation, model, seq), which no query reads since the vectors of a conversation are read whole."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("conversations", "0009_partition_messages"),
        ("search", "0002_partition_embeddings"),
        ("tenants", "0003_provider_credential"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="messageembedding", name="embedding_newest"),
        migrations.AddIndex(
            model_name="messageembedding",
            index=models.Index(fields=["conversation", "model", "id"], include=["tenant"], name="embedding_signature"),
        ),
    ]
