"""The rule-based summary of a window of messages: the sentences a later question would ask about.

``extractive_summary(messages)`` takes message dicts in the shape of
``conversations.services.message_to_dict``, oldest first, and answers a text that:

* keeps whole sentences of the users and assistants, never rewrites them: the ones that carry
  information (numbers, dates and times, proper names, preferences, plans and decisions, facts about
  people such as "my sister" or "I work as"), chosen by score from general features of English text
  (``sentence_score``), never from the wording of a particular conversation;
* drops small talk ("haha", "ok", "thanks!"), questions that carry nothing, and sentences whose
  words the kept ones already hold; the room the informative sentences leave goes to the rest of
  what was said that is more than small talk, the newest first;
* shows them in the order they were said, one line per message, each attributed to its speaker:
  the message's ``name`` (``metadata.name`` or ``metadata.langchain.data.name``), else its role
  ("Caroline: ...", "User: ..."); when the window spans several days, the first line of each day
  starts with its date ("[2023-05-08] Caroline: ...");
* ends with the tools the assistant called ("Tools: search_hotels"), when there is room;
* is at most ``budget_of(source)`` characters, ``source`` being the characters of the messages'
  contents: the whole source up to ``SHORT_SOURCE`` characters, at least ``COMPRESSION`` times
  shorter from ``SHORT_SOURCE * COMPRESSION`` characters on, never longer than its source, and at
  most ``max_tokens`` tokens (a window in which no user or assistant says anything is the one
  exception: it gets a one-line note, "3 messages (assistant, tool) and nothing said.");
* is the same for the same messages (no randomness, ties broken by position).

A window with nothing worth keeping is told as small talk between its speakers, or, when even that
note would be longer than the source, is its own text cut to the budget.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from conversations import tokens
from memory_wire.messages import tool_calls_of

# Sources up to this many characters may be kept whole.
SHORT_SOURCE = 120
# From SHORT_SOURCE * COMPRESSION characters on, the summary is at least this many times shorter.
COMPRESSION = 3
# A sentence is kept only with at least this score: small talk scores 0 or less.
MIN_SCORE = 2.0
# A sentence longer than this is cut at a word (with "…") before it is weighed.
MAX_SENTENCE_CHARS = 240
# A sentence of at most this many words, after another of the same message, is kept with it.
FRAGMENT_WORDS = 4
# A sentence whose content words the kept ones hold in this share or more adds nothing.
REDUNDANT_SHARE = 0.7

ABBREVIATIONS = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|Prof|St|Mt|Jr|Sr|vs|etc|e\.g|i\.e|approx|no)\.)$", re.IGNORECASE)
SENTENCE_BREAK = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")
WORD = re.compile(r"[^\W\d_][\w'’-]*|\d[\d.,:/]*")

MONTHS = (
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
).split()
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
NUMBER_WORDS = (
    "two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen "
    "eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred thousand million billion "
    "dozen half quarter twice first second third"
).split()

NUMBER = re.compile(r"\d|\b(?:" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
DATE_OR_TIME = re.compile(
    r"\b(?:"
    + "|".join(MONTHS + WEEKDAYS)
    + r"|today|tomorrow|yesterday|tonight|weekend|ago|since|until|deadline|birthday|anniversary"
    r"|(?:this|next|last|every|each)\s+(?:week|month|year|morning|evening|night|summer|winter|spring|autumn|fall|time)"
    r"|in\s+(?:spring|summer|autumn|fall|winter)|\d{1,2}(?::\d{2})?\s*(?:am|pm|h)\b|\d{1,2}:\d{2})",
    re.IGNORECASE,
)
PREFERENCE = re.compile(
    r"\b(?:love[sd]?|hate[sd]?|prefer(?:s|red)?|favou?rite|always|never|can'?t stand|allergic|enjoy(?:s|ed)?"
    r"|dislike[sd]?|fan of|rather|obsessed|can'?t live without|don'?t (?:like|eat|drink)|vegetarian|vegan)\b",
    re.IGNORECASE,
)
PLAN_OR_DECISION = re.compile(
    r"\b(?:will|won'?t|going to|gonna|plan(?:s|ned|ning)?|decided?|chose|booked|signed up|agreed|must|need to"
    r"|have to|should|start(?:ed|ing)?|finish(?:ed)?|moving|moved|quit|bought|adopted|engaged|married|joined"
    r"|promoted|hired|won|budget|deal)\b|\b(?:I|we|you|he|she|they)'ll\b",
    re.IGNORECASE,
)
PERSONAL_FACT = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+)?(?:sister|brother|mum|mom|mother|dad|father|parents|wife|husband|partner|boyfriend"
    r"|girlfriend|fianc[eé]e?|son|daughter|kids?|children|baby|boss|colleague|friend|cousin|aunt|uncle|grand\w+"
    r"|neighbou?r|flatmate|roommate|dog|cat|puppy|kitten|pet|job|team|teacher|doctor|name|house|flat|apartment"
    r"|car|school|company)\b"
    r"|\b(?:I|we)\s+(?:work|live|grew up|studied|teach|own|have(?! to\b)|got(?! to\b)|used to)\b|\bI'?m\s+(?:a|an)\s+\w+"
    r"|\bI\s+am\s+(?:a|an)\s+\w+|\bwork(?:s|ing)?\s+(?:as|at|for)\b",
    re.IGNORECASE,
)
# News: something that changed, was got, named or found out.
EVENT = re.compile(
    r"\b(?:finally|replaced|new|named|called|treated (?:myself|ourselves)|got|bought|adopted|gave up|took up|signed"
    r"|confirmed|diagnosed|turned out|broke|broken|lost|found|passed|failed|born|died|sold|ordered|won|launched)\b",
    re.IGNORECASE,
)
FIRST_PERSON = re.compile(r"\b(?:I|I'm|I've|I'd|my|we|our|we're|we've)\b")
SMALL_TALK = re.compile(
    r"^(?:\W*(?:ha(?:ha)+|lol|ok(?:ay)?|k|thanks?(?: you)?|thx|cheers|bye|see you|talk soon|hi+|hello|hey|yo|wow"
    r"|oh(?: no)?|ah|aw+|yes|yeah|yep|no|nope|sure|cool|nice|great|same|right|true|indeed|exactly|lovely"
    r"|good(?: night| morning)?|amazing|awesome|congrats|congratulations|sounds good|fair enough|me too|of course"
    r"|got it|noted|welcome|you'?re welcome|omg|yay|hmm+|uh|um)\b\W*)+$",
    re.IGNORECASE,
)
# Greetings and goodbyes inside a longer sentence ("Okay, I have to run, talk soon!").
GREETING_OR_GOODBYE = re.compile(
    r"\b(?:talk soon|talk later|see you|see ya|bye|gotta go|got to go|have to run|must run|catch you later|good night"
    r"|how are you|how was your|how have you been|what about you|thanks for|thank you for|have a (?:good|nice|great))\b",
    re.IGNORECASE,
)
# Words that start a sentence with a capital without being a name: the function words, the usual
# openers of a spoken sentence, interjections and irregular verbs (regular ones end in -ed, -ing, -s).
COMMON_OPENERS = frozenset(
    """a about after again all also am an and any are as at be been before being but by can could did do does
    doing done for from get got had has have having he her here hers him his how i if in into is it its just me
    more most my no not now of off on once one only or other our out over own same she should so some such than
    that the their them then there these they this those through to too up us very was we were what when where
    which while who whom why will with would you your yours yes yeah yep nope oh ah aw well anyway anyways still
    maybe perhaps sure okay ok haha lol wow thanks thank hey hi hello hiya good great nice cool sounds life enough
    let lets please sorry congrats congratulations totally really honestly definitely probably actually almost
    today tonight tomorrow yesterday back never always even though although because since until unless whether
    each every both either neither many much few lots lot plenty nothing something anything everything nobody
    somebody anybody everyone someone anyone go went gone come came take took make made see saw say said tell told
    know knew think thought feel felt find found give gave keep kept leave left lose lost meet met pay paid run ran
    read send sent spend spent buy bought bring brought catch caught drive drove eat ate fly flew forget forgot
    hear heard hold held sell sold sleep slept teach taught win won write wrote break broke choose chose begin
    began put set cut hit try ask look check call wait guess hope wish mind same right true fine sad funny poor
    lucky glad happy tired busy hard easy long short big small little new old best better worse worst last next
    first second another quite rather pretty wait whatever aww ooh oops yay hmm ugh omg phew gosh eh huh meh hah
    ha hehe yikes wow""".split()
)
NOT_NAMES = frozenset([*COMMON_OPENERS, *MONTHS, *WEEKDAYS, "i'm", "i've", "i'd", "i'll", "mr", "mrs", "ms", "dr"])
CONTENT_STOP_WORDS = COMMON_OPENERS


@dataclass(frozen=True)
class Sentence:
    position: int  # in the window, from 0: the order they were said
    message: int  # the index of its message in the window
    text: str
    score: float
    words: frozenset[str]  # its content words, lowercased


def extractive_summary(messages: Sequence[dict[str, Any]], *, max_tokens: int) -> str:
    """The summary of ``messages`` (oldest first): see the module docstring."""
    source = sum(len(message.get("content") or "") for message in messages)
    budget = budget_of(source)
    speakers = [speaker_of(message) for message in messages]
    days = [day_of(message) for message in messages]
    dated = len({day for day in days if day is not None}) > 1
    tools = sorted(
        {call["name"] for message in messages for call in tool_calls_of(message.get("metadata") or {}) if call.get("name")}
    )

    found = candidates(messages)
    informative = sorted((one for one in found if one.score >= MIN_SCORE), key=lambda one: (-one.score, one.position))
    # Room left: the rest that is more than small talk, the newest first (said last, most likely to matter next).
    rest = sorted((one for one in found if 0 < one.score < MIN_SCORE), key=lambda one: (-one.score, -one.position))
    tools_line = f"Tools: {', '.join(tools)}" if tools else ""
    kept = _chosen(informative, [], budget=budget, max_tokens=max_tokens, speakers=speakers, days=days, dated=dated)
    text = render(kept, speakers=speakers, days=days, dated=dated)
    if tools_line and _fits(f"{text}\n{tools_line}".strip(), budget=budget, max_tokens=max_tokens):
        budget -= len(tools_line) + 1  # what the assistant did goes before the rest of what was said
    else:
        tools_line = ""
    kept = _chosen(rest, kept, budget=budget, max_tokens=max_tokens, speakers=speakers, days=days, dated=dated)
    text = "\n".join(part for part in (render(kept, speakers=speakers, days=days, dated=dated), tools_line) if part)
    if not _fits(text, budget=budget_of(source), max_tokens=max_tokens):  # the tools' tokens tipped it over
        text = render(kept, speakers=speakers, days=days, dated=dated)
    if text:
        return text
    return _small_talk(messages, speakers=speakers, budget=budget_of(source), max_tokens=max_tokens)


def _chosen(
    ranked: Sequence[Sentence],
    kept: Sequence[Sentence],
    *,
    budget: int,
    max_tokens: int,
    speakers: Sequence[str],
    days: Sequence[date | None],
    dated: bool,
) -> list[Sentence]:
    """``kept`` and, best first, each sentence of ``ranked`` that still fits and adds something."""
    chosen = list(kept)
    for sentence in ranked:
        if _redundant(sentence, chosen):
            continue
        trial = sorted([*chosen, sentence], key=lambda one: one.position)
        if _fits(render(trial, speakers=speakers, days=days, dated=dated), budget=budget, max_tokens=max_tokens):
            chosen = trial
    return chosen


def budget_of(source: int) -> int:
    """The most characters a summary of ``source`` characters may have."""
    return min(source, max(SHORT_SOURCE, source // COMPRESSION))


def speaker_of(message: dict[str, Any]) -> str:
    """The message's speaker by name when it has one, else its role ("User", "Assistant")."""
    metadata = message.get("metadata") or {}
    name = metadata.get("name")
    stored = metadata.get("langchain")
    if not (isinstance(name, str) and name.strip()) and isinstance(stored, dict) and isinstance(stored.get("data"), dict):
        name = stored["data"].get("name")
    if isinstance(name, str) and name.strip():
        return " ".join(name.split())
    return str(message.get("role") or "message").capitalize()


def day_of(message: dict[str, Any]) -> date | None:
    created_at = message.get("created_at")
    if isinstance(created_at, datetime):
        return created_at.date()
    if isinstance(created_at, str):
        try:
            return datetime.fromisoformat(created_at).date()
        except ValueError:
            return None
    return None


# --- Sentences and their scores ----------------------------------------------------------------------


def candidates(messages: Sequence[dict[str, Any]]) -> list[Sentence]:
    """Every sentence the users and assistants said, in order, scored; the same sentence said again
    counts once, where it was first said."""
    texts = [
        (index, sentence)
        for index, message in enumerate(messages)
        if message.get("role") in ("user", "assistant")
        for sentence in sentences_of(message.get("content") or "")
    ]
    names_seen = {word for _, text in texts for word in _mid_sentence_capitals(text)}
    found: list[Sentence] = []
    said: set[str] = set()
    for index, text in texts:
        key = text.casefold()
        if key in said:
            continue
        said.add(key)
        found.append(
            Sentence(
                position=len(found),
                message=index,
                text=text,
                score=sentence_score(text, names_seen=names_seen),
                words=content_words(text),
            )
        )
    return found


def sentences_of(text: str) -> list[str]:
    """The sentences of ``text``, whitespace flattened; a long one cut at a word, with "…"."""
    found: list[str] = []
    for line in text.splitlines():
        pending = ""
        for piece in SENTENCE_BREAK.split(line.strip()):
            pending = f"{pending} {piece}".strip() if pending else piece.strip()
            if pending and not ABBREVIATIONS.search(pending):
                found.append(pending)
                pending = ""
        if pending:
            found.append(pending)
    glued: list[str] = []
    for sentence in found:
        fragment = len(WORD.findall(sentence)) <= FRAGMENT_WORDS and not GREETING_OR_GOODBYE.search(sentence)
        if glued and fragment and content_words(sentence) and not SMALL_TALK.match(sentence):
            glued[-1] = f"{glued[-1]} {sentence}"  # "The gearbox, apparently.": says what the one before means
        else:
            glued.append(sentence)
    return [_shortened(" ".join(sentence.split())) for sentence in glued if sentence.strip()]


def sentence_score(text: str, *, names_seen: frozenset[str] | set[str] = frozenset()) -> float:
    """How much a later question may need ``text``: the sum of the features it carries.

    A data value (a number, a date or a time) and a proper name weigh most, then a preference, a
    plan or decision and a fact about a person; speaking in the first person adds a little. A
    question, a very short sentence, a greeting or goodbye and small talk weigh less or nothing.
    """
    words = WORD.findall(text)
    if not words or SMALL_TALK.match(text):
        return 0.0
    score = 0.0
    if NUMBER.search(text):
        score += 2
    if DATE_OR_TIME.search(text):
        score += 2
    names = proper_names(text, names_seen=names_seen)
    if names:
        score += min(2 + (len(names) - 1), 4)
    if PREFERENCE.search(text):
        score += 2
    if PLAN_OR_DECISION.search(text):
        score += 1.5
    if PERSONAL_FACT.search(text):
        score += 1.5
    if EVENT.search(text):
        score += 1.5
    if FIRST_PERSON.search(text):
        score += 0.5
    if text.rstrip("\"')").endswith("?"):
        score -= 1.5
    if len(words) < 4:
        score -= 1
    if GREETING_OR_GOODBYE.search(text):
        score -= 2
    return score


def proper_names(text: str, *, names_seen: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The capitalised words of ``text`` that look like names (people, places, titles, brands).

    A capital inside a sentence is a name unless it is a common word ("I", a month, a weekday). The
    sentence's first word has a capital anyway: it counts when it is followed by another capital
    ("Ezra Stemulo"), when the same word has a capital inside another sentence of the window, or when
    it is neither a common opener nor shaped like a verb or an adverb (-ed, -ing, -ly, -'s).
    """
    words = WORD.findall(text)
    found = _mid_sentence_capitals(text)
    if words and _capitalised(words[0]):
        first = words[0].casefold()
        followed_by_name = len(words) > 1 and _capitalised(words[1]) and words[1].casefold() not in NOT_NAMES
        plain = first not in NOT_NAMES and not re.search(r"(?:ed|ing|ly|'s|’s|n't)$", first)
        if first not in NOT_NAMES and (followed_by_name or first in names_seen or plain):
            found.insert(0, first)
    return found


def content_words(text: str) -> frozenset[str]:
    return frozenset(
        word.casefold()
        for word in WORD.findall(text)
        if word[0].isdigit() or (len(word) > 2 and word.casefold() not in CONTENT_STOP_WORDS)
    )


def _mid_sentence_capitals(text: str) -> list[str]:
    words = WORD.findall(text)
    return [word.casefold() for word in words[1:] if _capitalised(word) and word.casefold() not in NOT_NAMES]


def _capitalised(word: str) -> bool:
    return word[:1].isupper()


def _shortened(sentence: str) -> str:
    if len(sentence) <= MAX_SENTENCE_CHARS:
        return sentence
    cut = sentence[: MAX_SENTENCE_CHARS - 1]
    space = cut.rfind(" ")
    if space > MAX_SENTENCE_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def _redundant(sentence: Sentence, kept: Sequence[Sentence]) -> bool:
    """Its content words are, for the most part, in the sentences kept already."""
    if not sentence.words or not kept:
        return False
    covered = frozenset().union(*(other.words for other in kept))
    return len(sentence.words & covered) >= REDUNDANT_SHARE * len(sentence.words)


# --- The text --------------------------------------------------------------------------------------


def render(kept: Sequence[Sentence], *, speakers: Sequence[str], days: Sequence[date | None], dated: bool) -> str:
    """One line per message, its kept sentences in order after its speaker; the date before the
    first line of each day when the window spans several."""
    lines: list[str] = []
    current_message: int | None = None
    current_day: date | None = None
    for sentence in kept:
        if sentence.message == current_message:
            lines[-1] = f"{lines[-1]} {sentence.text}"
            continue
        current_message = sentence.message
        line = f"{speakers[sentence.message]}: {sentence.text}"
        day = days[sentence.message]
        if dated and day is not None and day != current_day:
            current_day = day
            line = f"[{day.isoformat()}] {line}"
        lines.append(line)
    return "\n".join(lines)


def _fits(text: str, *, budget: int, max_tokens: int) -> bool:
    return len(text) <= budget and tokens.count(text) <= max_tokens


def _small_talk(messages: Sequence[dict[str, Any]], *, speakers: Sequence[str], budget: int, max_tokens: int) -> str:
    """The summary of a window in which no sentence carries information."""
    spoken = [
        index
        for index, message in enumerate(messages)
        if message.get("role") in ("user", "assistant") and (message.get("content") or "").strip()
    ]
    if not spoken:
        roles = ", ".join(sorted({str(message.get("role")) for message in messages}))
        return f"{len(messages)} messages ({roles}) and nothing said."
    names = list(dict.fromkeys(speakers[index] for index in spoken))
    note = f"Small talk between {' and '.join(names)}." if len(names) > 1 else f"Small talk from {names[0]}."
    if _fits(note, budget=budget, max_tokens=max_tokens):
        return note
    flat = " ".join(" ".join((messages[index].get("content") or "").split()) for index in spoken)
    if len(flat) > budget:
        cut = flat[: budget + 1]
        flat = cut[: cut.rfind(" ")] if " " in cut else flat[:budget]  # ends at a word
    return tokens.truncate(flat, max_tokens)
