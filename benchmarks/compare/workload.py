"""The generated workload every system runs: conversations of realistic messages, 200 to 2,000 characters."""

import random
from dataclasses import dataclass

WINDOW = 50  # messages a window read returns (MEMORY_HISTORY_LIMIT)

# Sentences of the kind agents exchange, so text compresses and tokenises like real turns.
SENTENCES = [
    "Could you check the delivery status of my order from last Tuesday?",
    "I have looked up the order and it left the warehouse this morning.",
    "The refund for the cancelled booking should reach your card within five working days.",
    "Please remind me what we decided about the budget for the second quarter.",
    "We agreed to move the marketing spend to the product launch in May.",
    "My flight to Lisbon was moved, so the hotel reservation needs to change as well.",
    "I found two hotels near the old town with free cancellation and breakfast included.",
    "The meeting with the support team is scheduled for Thursday at ten.",
    "Here is a summary of the ticket history and the steps already tried.",
    "The customer prefers email over phone calls and speaks Spanish and English.",
    "Let me compare the subscription plans and list what changes on renewal.",
    "The invoice shows a duplicated charge of 42 euros on the third of the month.",
]


@dataclass(frozen=True)
class Conversation:
    conversation_id: str
    size: int


def content(rng: random.Random) -> str:
    """One message of 200 to 2,000 characters."""
    length = rng.randint(200, 2000)
    parts: list[str] = []
    total = 0
    while total < length:
        sentence = rng.choice(SENTENCES)
        parts.append(sentence)
        total += len(sentence) + 1
    return " ".join(parts)[:length]


def message(rng: random.Random, index: int) -> dict[str, str]:
    return {"role": "user" if index % 2 == 0 else "assistant", "content": content(rng)}


def messages(rng: random.Random, count: int, start: int = 0) -> list[dict[str, str]]:
    return [message(rng, start + index) for index in range(count)]
