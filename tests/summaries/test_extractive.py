"""The rule-based summary: the sentences a later question asks about, by speaker, at least 3 times
shorter than what was said, never longer; and the same summary stored through the service."""

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from conversations import tokens
from summaries import services
from summaries.extractive import COMPRESSION, budget_of, extractive_summary
from summaries.summarizer import RULE_BASED, RULE_BASED_MAX_TOKENS, rule_based_summary
from tests.summaries.conftest import store


def said(seq: int, speaker: str, content: str, *, role: str | None = None, **fields: Any) -> dict[str, Any]:
    role = role or ("user" if speaker == "Caroline" else "assistant")
    return {"id": f"id-{seq}", "seq": seq, "role": role, "content": content, "metadata": {"name": speaker}, **fields}


CHAT = [
    said(1, "Caroline", "Hey Mel! How are you doing?"),
    said(2, "Melanie", "Haha, good thanks! Busy week, you know how it is."),
    said(3, "Caroline", "Same here. The weather has been so grey, I barely left the house."),
    said(4, "Melanie", "Oh no. Well, at least it's nearly the weekend."),
    said(5, "Caroline", "True! Anyway, big news: I finally adopted a puppy, we named him Biscuit."),
    said(6, "Melanie", "Aww, that's so sweet! Send me pictures."),
    said(7, "Caroline", "Will do, haha."),
    said(8, "Melanie", "I ran the Brighton half marathon on Sunday in 1:52, a personal best!"),
    said(9, "Caroline", "Wow, congrats!"),
    said(10, "Melanie", "Thanks! My legs still hurt though."),
    said(11, "Caroline", "I bet. Ok, I have to run, talk soon!"),
    said(12, "Melanie", "ok"),
    said(13, "Caroline", "I love hiking in the Lake District, we should go in June."),
    said(14, "Melanie", "Honestly I hate camping, but I'm in if we stay at a B&B."),
    said(15, "Caroline", "lol fair enough"),
    said(16, "Melanie", "thanks!"),
    said(17, "Caroline", "Ugh, I'm so tired today, it has been one of those days, you know?"),
    said(18, "Melanie", "Totally, same here. Get some rest and drink lots of water!"),
    said(19, "Caroline", "Yes, yes, I will try, I promise. Have a good evening!"),
    said(20, "Melanie", "You too! Bye for now."),
]
SMALL_TALK = [
    {"role": "user", "content": "Haha ok, sounds good to me, thanks a lot!", "metadata": {}},
    {"role": "assistant", "content": "You're welcome, happy to help anytime!", "metadata": {}},
] * 2


def source_of(messages: list[dict[str, Any]]) -> int:
    return sum(len(message["content"]) for message in messages)


def test_a_multi_speaker_chat_is_summarised_at_least_three_times_shorter():
    text = rule_based_summary(CHAT)

    assert source_of(CHAT) > 600
    assert 0 < len(text) * COMPRESSION <= source_of(CHAT)


def test_the_sentences_with_a_name_a_number_a_date_or_a_preference_are_kept_by_speaker_name():
    lines = rule_based_summary(CHAT).splitlines()

    assert "Caroline: Anyway, big news: I finally adopted a puppy, we named him Biscuit." in lines
    assert "Melanie: I ran the Brighton half marathon on Sunday in 1:52, a personal best!" in lines
    assert any(line.startswith("Caroline: I love hiking in the Lake District") for line in lines)
    assert all(line.split(": ", 1)[0] in ("Caroline", "Melanie") for line in lines)
    assert not any(line.startswith(("User:", "Assistant:")) for line in lines)


def test_small_talk_is_dropped():
    text = rule_based_summary(CHAT).casefold()

    for chit_chat in ("haha", "lol", "thanks!", "wow", "talk soon", "how are you", "send me pictures"):
        assert chit_chat not in text
    assert "ok" not in text.split()


def test_without_a_name_the_speaker_is_the_role_and_a_langchain_name_counts():
    messages = [
        {"role": "user", "content": "My budget is 2,000 EUR for the trip to Lisbon.", "metadata": {}},
        {
            "role": "assistant",
            "content": "Then the Alfama Patio at 120 EUR a night fits.",
            "metadata": {"langchain": {"data": {"name": "planner"}}},
        },
        *SMALL_TALK,
    ]

    assert rule_based_summary(messages).splitlines() == [
        "User: My budget is 2,000 EUR for the trip to Lisbon.",
        "planner: Then the Alfama Patio at 120 EUR a night fits.",
    ]


@pytest.mark.parametrize(
    "contents",
    [
        ["ok"],
        ["hi", "ok"],
        ["thanks!", "haha", "lol"],
        ["We meet at 9."],
        ["I was born in Oslo in 1990.", "Nice."],
        ["Meeting on 3 May at 10:00 with Ana Ruiz in Porto, budget 400 EUR, I prefer trains."],
        [" ".join(["I moved to Berlin in 2019 and I love it."] * 30)],
    ],
)
def test_a_summary_is_never_longer_than_what_was_said(contents):
    messages = [said(seq, "Caroline" if seq % 2 else "Melanie", text) for seq, text in enumerate(contents, start=1)]

    text = rule_based_summary(messages)

    assert 0 < len(text) <= source_of(messages)
    assert len(text) <= budget_of(source_of(messages))


def test_a_long_window_stays_within_the_token_bound_and_three_times_shorter():
    messages = [
        said(seq, "Caroline" if seq % 2 else "Melanie", f"On day {seq} I paid {seq * 10} EUR for the hotel in Rome. " * 15)
        for seq in range(1, 51)
    ]

    text = rule_based_summary(messages)

    assert 0 < tokens.count(text) <= RULE_BASED_MAX_TOKENS
    assert len(text) * COMPRESSION <= source_of(messages)


def test_a_sentence_said_twice_is_kept_once():
    messages = [*CHAT, said(17, "Melanie", "I ran the Brighton half marathon on Sunday in 1:52, a personal best!")]

    text = rule_based_summary(messages)

    assert text.count("Brighton half marathon") == 1


def test_the_same_messages_give_the_same_summary():
    assert rule_based_summary(CHAT) == rule_based_summary([dict(message) for message in CHAT])
    assert extractive_summary(CHAT, max_tokens=50) == extractive_summary(CHAT, max_tokens=50)


def test_messages_spanning_days_are_dated_by_day():
    first, second = datetime(2023, 5, 8, 18, 0, tzinfo=UTC), datetime(2023, 5, 20, 9, 30, tzinfo=UTC)
    news = {first: "I adopted a puppy called Biscuit on Saturday.", second: "Biscuit ate my left shoe, 90 EUR of leather gone."}
    replies = ["Haha, oh no. Poor you, that's so annoying, I'm sorry!", "Lovely! I'm so happy for you, that is really wonderful!"]
    messages = []
    for day, text in news.items():
        messages.append(said(len(messages) + 1, "Caroline", text, created_at=day.isoformat()))
        for reply in replies * 2:
            at = day + timedelta(seconds=30 * len(messages))
            messages.append(said(len(messages) + 1, "Melanie", reply, created_at=at.isoformat()))

    assert rule_based_summary(messages).splitlines() == [
        "[2023-05-08] Caroline: I adopted a puppy called Biscuit on Saturday.",
        "[2023-05-20] Caroline: Biscuit ate my left shoe, 90 EUR of leather gone.",
    ]


def test_a_window_of_small_talk_says_so(tenant):
    messages = [
        said(seq, "Caroline" if seq % 2 else "Melanie", text)
        for seq, text in enumerate(
            ["Hi!", "Hey, how are you?", "Good thanks, you?", "Fine, fine. Haha.", "Ok, talk soon!", "Bye!"] * 4, start=1
        )
    ]

    assert rule_based_summary(messages) == "Small talk between Caroline and Melanie."


def test_the_stored_summary_is_the_extractive_one_by_speaker_name(tenant):
    store(tenant, "chat", [(message["role"], message["content"], message["metadata"]) for message in CHAT])

    summary = services.summary_create_now(tenant=tenant, conversation_id="chat")

    assert summary.model == RULE_BASED
    assert summary.text == rule_based_summary(CHAT[-12:])  # the window: the newest MEMORY_SUMMARY_WINDOW (12)
    assert "Caroline: I love hiking in the Lake District, we should go in June." in summary.text
    assert summary.token_count == tokens.count(summary.text)
