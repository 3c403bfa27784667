"""One user erased everywhere: their conversations (as ``conversations.services.conversation_erase``
erases each, with their vectors, summaries, checkpoints and the memories extracted from them), their
facts and fact history, their memories and memory history, and the dead letters of their
conversations. What stays is a tombstone per conversation holding a digest of its id, never the id."""

from dataclasses import dataclass

import structlog
from django.db.models import Q

from checkpoints.models import Checkpoint
from conversations.models import Conversation, DeadLetter
from conversations.services import conversation_erase
from core.exceptions import NotFound
from extraction.models import Memory
from extraction.services import user_memories_erase
from facts.services import user_facts_erase
from search.models import MessageEmbedding
from summaries.models import Summary
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


@dataclass(frozen=True)
class UserEraseResult:
    conversations: int
    messages: int
    embeddings: int
    summaries: int
    checkpoints: int
    facts: int
    memories: int
    dead_letters: int
    cache_keys: int


def user_erase(*, tenant: Tenant, user_id: str) -> UserEraseResult:
    """Erase one user of a tenant everywhere: each of their conversations as ``conversation_erase``
    does (rows, cache keys, queued writes; with them their vectors, summaries, checkpoints and the
    memories read from them), their facts and fact history, their other memories with their history,
    and the dead letters of their conversations. What stays is a tombstone per conversation holding a
    digest of its id, never the id. Repeating it erases what arrived since.
    """
    conversation_ids = list(
        Conversation.objects.for_tenant(tenant).filter(user_id=user_id).values_list("conversation_id", flat=True)
    )
    owned = {"conversation__tenant": tenant, "conversation__user_id": user_id}
    embeddings = MessageEmbedding.objects.for_tenant(tenant).filter(**owned).count()
    summaries = Summary.objects.for_tenant(tenant).filter(**owned).count()
    checkpoints = Checkpoint.objects.for_tenant(tenant).filter(**owned).count()
    memories = Memory.objects.for_tenant(tenant).filter(user_id=user_id).count()
    messages = cache_keys = 0
    for conversation_id in conversation_ids:
        try:
            result = conversation_erase(tenant=tenant, conversation_id=conversation_id)
        except NotFound:
            continue  # erased meanwhile
        messages += result.messages
        cache_keys += result.cache_keys
    facts = user_facts_erase(tenant=tenant, user_id=user_id)
    user_memories_erase(tenant=tenant, user_id=user_id)  # what no conversation's erase took
    dead_letters = (
        DeadLetter.objects.for_tenant(tenant)
        .filter(Q(payload__conversation_id__in=conversation_ids) | Q(payload__user_id=user_id))
        .delete()[0]
    )
    logger.info("user_erased", tenant=tenant.slug, conversations=len(conversation_ids), messages=messages, facts=facts)
    return UserEraseResult(
        conversations=len(conversation_ids),
        messages=messages,
        embeddings=embeddings,
        summaries=summaries,
        checkpoints=checkpoints,
        facts=facts,
        memories=memories,
        dead_letters=dead_letters,
        cache_keys=cache_keys,
    )
