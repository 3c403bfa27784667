"""The context endpoint's answer (``build_agent_context``) with what the apps above conversations add:
long-term memory (``use_memory``: the memory bundle of ``memory.bundle`` in the system message) and the
agent's latest checkpoint (``checkpoint_namespace``). The context itself, its cache and its budget
are ``conversations.selectors.conversation_context``'s."""

import dataclasses
import functools
from typing import Any

from checkpoints.selectors import checkpoint_latest
from conversations import context, selectors
from conversations.models import Conversation
from core.exceptions import NotFound
from memory import bundle as memory_bundle
from tenants.models import Tenant


def conversation_context(
    *,
    tenant: Tenant,
    conversation_id: str,
    request: context.ContextRequest,
    checkpoint_namespace: str | None = None,
    use_memory: bool = False,
    top_k: int | None = None,
    memory_filters: Any = None,
) -> dict[str, Any]:
    """``build_agent_context``: the messages to send and what they were built from, and with
    ``checkpoint_namespace`` the agent's latest checkpoint there (for the agent to merge into its state).

    With ``use_memory`` the system message also carries the summaries, the user's facts and the
    older messages most relevant to the query, within what the budget holds beyond the conversation's
    own needs (``_memory_budget``), and the answer carries
    the memory bundle and the prompt rendered from it (never served from the context cache: facts
    change without the conversation changing). The checkpoint is read fresh every time.
    """
    memory = (
        functools.partial(_with_memory, tenant=tenant, conversation_id=conversation_id, top_k=top_k, filters=memory_filters)
        if use_memory
        else None
    )
    answer = selectors.conversation_context(tenant=tenant, conversation_id=conversation_id, request=request, memory=memory)
    if checkpoint_namespace is not None:
        try:
            answer["checkpoint"] = checkpoint_latest(
                tenant=tenant, conversation_id=conversation_id, namespace=checkpoint_namespace
            )
        except NotFound:
            answer["checkpoint"] = None
    return answer


def _with_memory(
    *,
    tenant: Tenant,
    conversation_id: str,
    request: context.ContextRequest,
    history: list[dict[str, Any]],
    top_k: int | None,
    filters: Any = None,
    current_id: str | None = None,
) -> tuple[dict[str, Any], str, context.ContextRequest]:

    owner = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).values("user_id", "metadata").first()
    user_id = owner["user_id"] if owner else ""
    location = (owner or {}).get("metadata", {}).get("location")
    bundle, relevant = memory_bundle.memory_bundle(
        tenant=tenant,
        conversation_id=conversation_id,
        user_id=user_id,
        query=request.query,
        history=history,
        top_k=top_k,
        filters=filters,
    )
    # The query's own message, stored before asking, is the best match of the query: never an "earlier" one.
    bundle["context"] = [item for item in bundle["context"] if item["message_id"] != current_id]
    relevant = [item for item in relevant if item["message_id"] != current_id]
    # The newest turn is sent in full whatever its length (an agent's tool loop asks again before
    # its turn ends, its question no longer the newest message): none of it is "earlier".
    newest_question = max((index for index, message in enumerate(history) if message["role"] == "user"), default=len(history))
    in_full = {message["id"] for message in history[-2 * max(1, request.short_term_turns) :] + history[newest_question:]}
    block = memory_bundle.relevant_context_block(bundle, relevant, exclude=in_full, max_tokens=_memory_budget(request, history))
    rendered = memory_bundle.render_prompt(
        bundle, query=request.query, history=history, location=location if isinstance(location, str) else None
    )
    if block:
        system_prompt = f"{request.system_prompt}\n\n{block}" if request.system_prompt else block
        request = dataclasses.replace(request, system_prompt=system_prompt)
    return bundle, rendered, request


def _memory_budget(request: context.ContextRequest, history: list[dict[str, Any]]) -> int:
    """The tokens long-term memory may add to the system message: what the budget holds beyond what
    the conversation itself needs (``context.history_tokens``: the system prompt, the query, the
    recent turns, room for the older turns' summary), and at least a quarter of it; never more than
    the budget leaves beside the system prompt and the query. A new conversation gives memory nearly all."""
    fixed = context.fixed_tokens(request) + context.PER_MESSAGE + 2  # + the system message the block may open
    beyond = request.max_tokens - context.history_tokens(history=history, request=request)
    return max(0, min(max(beyond, request.max_tokens // 4), request.max_tokens - fixed))
