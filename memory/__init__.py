"""Features that combine the apps: each one reads or erases across conversations, search, summaries,
facts and checkpoints, so it sits above them (no app below imports it).

- ``memory.bundle``: the memory bundle (``use_memory``): the relevant older messages (search), the
  summaries, the user's facts, and the prompt rendered from them.
- ``memory.context``: the context endpoint's answer with long-term memory and the agent's latest
  checkpoint, built on ``conversations.selectors.conversation_context``.
- ``memory.erase``: one user erased everywhere (``DELETE /users/{id}/``).
- ``memory.api``: the endpoints of these features.
"""
