"""Long multi-session conversations between two people, with questions labelled by the turns that answer them.

Contract
--------
``dataset_generate(users=, seed=, sessions=, turns=)`` returns the same ``Dataset`` for the same
arguments on any machine (every draw comes from ``random.Random`` seeded with a string), and user
``i`` does not depend on how many users are asked for, so ``--users 2`` is a prefix of ``--users 6``.
Shaped like LoCoMo: each user is a pair of friends chatting over 19 to 32 sessions days or weeks
apart, 15 to 30 turns each, with dialog ids ``D<session>:<turn>``; ten users make about 6,500 turns.

How the facts are told
----------------------
Each friend has a life the conversation keeps coming back to: a pet, a job, a move, races, trips,
lessons, a relative's engagement, tastes, plans, purchases and more, both friends drawing from the
same kinds, and three traits and a line of work that show only in what they do. A fact is told
once, in one of three ways, each phrased from several templates with alternatives, synonyms, hedges
and fillers, so that pairs seldom tell it in the same words:

* said: "We picked up a little puppy on Saturday. Named him Rex." (the turn is the evidence);
* asked: "Did you end up getting the puppy?" / "Yep, Rex. He's a handful." (the reply is the
  evidence, and sometimes the question too; the reply alone does not say what it is about);
* opened: "Guess who came home with a puppy this weekend." / "Nooo! Name?" / "Rex!" (the last reply,
  and sometimes the opening).

Around the facts is what makes them hard to find: the topic before it happens ("we're thinking of
getting a puppy", a race signed up for: the same words on another date), echoes after ("walking the
dog in the rain again"), the other friend's dog, the pair's own cities, foods and races in unrelated
small talk, the friend's name in many turns that say nothing about them ("Congratulations, Rosa!"),
and facts that change (a holiday booked somewhere else, a flat that fell through: the newer turn
answers).

What the questions ask
----------------------
Questions speak in the third person and fall in LoCoMo's four kinds:

* ``single-hop``: one beat of one session holds the answer, told in any of the three ways, the
  question usually in the words the fact is told in, sometimes in others;
* ``multi-hop``: turns from different sessions ("What did Caroline's dog swallow?" needs the turn
  that names the dog and the one where Rex swallowed a sock; "In which cities has Rosa run races?"
  needs every race; "Where did she first plan to go, and where did she go?");
* ``temporal``: "When did ...?"; the turn says "on Saturday", the answer is a date worked out from
  the session's date;
* ``open-domain``: an inference from what a person said in one to three sessions ("Would Rosa enjoy a
  camping trip?" from turns about tents and ridge walks; "What might Rosa's job be related to?" from
  stories of night shifts on the ward): the question shares no content word with its evidence
  (``content_words`` makes that checkable).

Roughly LoCoMo's proportions: about half single-hop, a fifth temporal, a sixth multi-hop, the rest
open-domain. Who said a thing is in the turn's speaker only, never in its text (speakers do not
say their own names): "What is the name of Caroline's dog?" has to tell Caroline's turn from her
friend's "we adopted a kitten called Luna". Evidence is what the person a question names said,
except the friend's question right before an elliptical reply, which is labelled with it when it
holds part of the answer or the subject.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")


def _frozen(value: Any) -> Any:
    """JSON's lists as the tuples the templates are drawn from (a draw from a tuple and from a list of
    the same values is the same draw; tuples are what the code adds to and compares)."""
    if isinstance(value, list):
        return tuple(_frozen(element) for element in value)
    if isinstance(value, dict):
        return {name: _frozen(element) for name, element in value.items()}
    return value


# What the pairs say, beside this module in ``stories.json``: ``shared`` holds the vocabulary and
# the phrasings several stories draw from, by the name of the constant each becomes here; ``stories``
# holds each story's own templates, by story (``_pet`` reads ``STORIES_TOLD["pet"]``): its
# ``setup`` lines, each ``telling``'s ways to tell a fact (``_Telling``'s fields), the ``echoes``
# after it, the ``question`` phrasings and the ``choices`` a story picks among.
_TOLD = _frozen(json.loads(Path(__file__).with_name("stories.json").read_text(encoding="utf-8")))
SHARED: Mapping[str, Any] = _TOLD["shared"]
STORIES_TOLD: Mapping[str, Mapping[str, Any]] = _TOLD["stories"]


# --- The dataset ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    dia_id: str  # "D3:14": session 3, turn 14 (both from 1)
    speaker: str
    text: str


@dataclass(frozen=True)
class Session:
    number: int
    date: datetime  # when it started (UTC)
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    text: str
    evidence: tuple[str, ...]  # dialog ids of the turns that hold the answer
    category: str
    answer: str


@dataclass(frozen=True)
class User:
    """A pair of people and everything they said to each other: one user of the service."""

    user_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    def turns(self) -> dict[str, Turn]:
        return {turn.dia_id: turn for session in self.sessions for turn in session.turns}


@dataclass(frozen=True)
class Dataset:
    name: str
    users: tuple[User, ...]

    @property
    def question_count(self) -> int:
        return sum(len(user.questions) for user in self.users)

    @property
    def turn_count(self) -> int:
        return sum(len(session.turns) for user in self.users for session in user.sessions)


# --- Checking wording ------------------------------------------------------------------------------

STOP_WORDS = frozenset(
    """a about after again all also am an and any are as at be been before being but by can could did do does
    doing done for from get got had has have having he her here hers him his how i if in into is it its just
    me more most my no not now of off on once one only or other our out over own s same she should so some
    such t than that the their them then there these they this those through to too up us very was we were
    what when where which while who whom why will with would you your yours""".split()
)


def content_words(text: str, *, ignore: Sequence[str] = ()) -> set[str]:
    """The words of ``text`` that carry meaning, crudely stemmed (so "runs" and "running" match)."""
    ignored = {word.lower() for name in ignore for word in name.split()}
    words = set()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in STOP_WORDS or word in ignored or len(word) < 3:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        words.add(word)
    return words


# --- Vocabulary ----------------------------------------------------------------------------------

WOMEN = SHARED["WOMEN"].split()
MEN = SHARED["MEN"].split()
PEOPLE = SHARED["PEOPLE"].split()
PET_NAMES = SHARED["PET_NAMES"].split()
CITIES = SHARED["CITIES"].split()
PLACES = SHARED["PLACES"]
FOODS = SHARED["FOODS"]
DISHES = SHARED["DISHES"]
SHOWS = SHARED["SHOWS"]
SPORTS = SHARED["SPORTS"]
INSTRUMENTS = SHARED["INSTRUMENTS"]
WEEKDAYS = SHARED["WEEKDAYS"]
COLOURS = SHARED["COLOURS"]
MONTHS = SHARED["MONTHS"]
SUBJECTS = SHARED["SUBJECTS"]
RARE_ONSETS = "b br c ch d dr f fl g gr h k kr l m n p pr qu r s sk st t th tr v w z".split()
RARE_VOWELS = "a e i o u ai ea ou y oa".split()
RARE_CODAS = ["", "", "n", "r", "l", "m", "s", "th", "ck", "ld", "rn", "x", "sk"]
RARE_ENDINGS = "wick mere holt ara ello ington ford vale by ix ova ane ston worth aby ulo enza".split()


# --- Drafting: a story is beats (exchanges) told in order, sessions apart, and the questions they answer --


@dataclass(frozen=True)
class Person:
    name: str
    subject: str
    object: str
    possessive: str


def _person(name: str, woman: bool) -> Person:
    return Person(name, "she", "her", "her") if woman else Person(name, "he", "him", "his")


@dataclass
class _Beat:
    lines: list[tuple[bool, str]]  # (said by the story's owner, text)
    evidence: tuple[int, ...] = ()  # the lines that hold the fact (none: the topic without the fact)
    when: tuple[int | None, int | None] | None = None  # (days before the session, or the last such weekday)


@dataclass
class _Draft:
    category: str
    text: str
    answer: str  # may hold {date}: the date of the beat ``dated`` (the event, not the session)
    beats: tuple[int, ...]
    dated: int | None = None


@dataclass
class _Story:
    beats: list[_Beat]
    questions: list[_Draft]
    owner: int = 0  # which of the pair tells it: set when the pair's stories are drawn
    # (a question over every story that shares it and the owner told, this story's part of the answer,
    # its beat): "In which cities has Rosa run races?" is multi-hop once she told two.
    tallies: list[tuple[str, str, int]] = field(default_factory=list)
    # What the owner says about the same topic in later sessions without the fact ("walking the dog
    # in the rain again"): the distractors closest to the question, in meaning and in words.
    echoes: list[str] = field(default_factory=list)


# (phrase, days before the session, or the weekday it names: the last one before the session)
WHEN = SHARED["WHEN"]


@dataclass
class _Context:
    rng: random.Random
    owner: Person
    other: Person
    used: set[str] = field(default_factory=set)
    mentioned: dict[str, list[str]] = field(default_factory=dict)  # the pair's own places, foods...: small talk reuses them
    echoes: list[str] = field(default_factory=list)  # set by the story's builder

    def pick(self, pool: Sequence[Any]) -> Any:
        return self.rng.choice(pool)

    def fresh(self, pool: Sequence[str]) -> str:
        """A value of ``pool`` no story of this pair has used yet (so a name points at one thing)."""
        unused = [value for value in pool if value not in self.used]
        value = self.rng.choice(unused or list(pool))
        self.used.add(value)
        return value

    def mention(self, kind: str, value: str) -> str:
        """Note ``value`` as one of the pair's own (a city, a food), for small talk to come back to."""
        self.mentioned.setdefault(kind, []).append(value)
        return value

    def rare(self) -> str:
        """An invented word, said once in the whole conversation."""
        while True:
            word = (
                self.pick(RARE_ONSETS) + self.pick(RARE_VOWELS) + self.pick(RARE_CODAS) + self.pick(RARE_ENDINGS)
            ).capitalize()
            if word not in self.used and len(word) >= 6:
                self.used.add(word)
                return word

    def when(self) -> tuple[str, tuple[int | None, int | None]]:
        phrase, days, weekday = self.pick(WHEN)
        return phrase, (days, weekday)

    def say(self, template: str, values: Mapping[str, Any] | None = None) -> str:
        """Something the pair says: the template in one of its wordings."""
        return _say(self.rng, template, values or {}, reword=True)

    def ask(self, *phrasings: str, **values: Any) -> str:
        """A question in one of several phrasings: usually the first, in the words the fact is told in,
        as people ask; sometimes another."""
        chosen = phrasings[0] if len(phrasings) == 1 or self.rng.random() < 0.6 else self.pick(phrasings[1:])
        return _say(self.rng, chosen, values)


_ALTERNATIVES = re.compile(r"\[([^\[\]]*)\]")


def _vary(rng: random.Random, template: str) -> str:
    """``[a|b|c]`` becomes one of a, b, c (``[a|]``: a or nothing), innermost first."""
    while (match := _ALTERNATIVES.search(template)) is not None:
        template = template[: match.start()] + rng.choice(match.group(1).split("|")) + template[match.end() :]
    return template


def _tidy(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s+([,.!?])", r"\1", text)
    text = re.sub(r"([.!?]) ([a-z])", lambda match: f"{match.group(1)} {match.group(2).upper()}", text)
    return text[0].upper() + text[1:] if text else text


# Ways of saying the same thing: a phrase of a template may come out as any of its group.
SYNONYMS: tuple[tuple[str, ...], ...] = SHARED["SYNONYMS"]
_SYNONYM_OF = {phrase: group for group in SYNONYMS for phrase in group}
_SYNONYM = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _SYNONYM_OF), key=len, reverse=True)) + r")\b")


def _reword(rng: random.Random, template: str) -> str:
    """Half the phrases that have synonyms swapped for one of them."""
    return _SYNONYM.sub(lambda match: rng.choice(_SYNONYM_OF[match.group(1)]) if rng.random() < 0.5 else match.group(1), template)


def _say(rng: random.Random, template: str, values: Mapping[str, Any], *, reword: bool = False) -> str:
    """A template with its alternatives chosen (and maybe its phrases reworded) and its gaps filled, as a sentence."""
    template = _vary(rng, template)
    return _tidy((_reword(rng, template) if reword else template).format_map(values))


# Before and after a fact, so that turns are not the bare fact: fillers, hedges, other subjects.
FILLERS = SHARED["FILLERS"]
PREAMBLES = SHARED["PREAMBLES"]
AFTERTHOUGHTS = SHARED["AFTERTHOUGHTS"]


# What friends add to a reply: a question back, a kind word, a thought that carries no fact.
FOLLOW_UPS = SHARED["FOLLOW_UPS"]
SUPPORT = SHARED["SUPPORT"]
ELABORATIONS = SHARED["ELABORATIONS"]


def _react(rng: random.Random, text: str, name: str) -> str:
    """A friend's reaction as friends write them: often a question back or a kind word, sometimes the name."""
    roll = rng.random()
    if roll < 0.3:
        text = f"{text} {rng.choice(FOLLOW_UPS)}"
    elif roll < 0.6:
        text = f"{text} {rng.choice(SUPPORT)}"
    elif roll < 0.8:
        text = f"{text} {rng.choice(SUPPORT)} {rng.choice(FOLLOW_UPS)}"
    return _address(rng, text, name)


LEAD_INS = SHARED["LEAD_INS"]


def _lead_in(rng: random.Random, text: str, chance: float = 0.5) -> str:
    """A question to the friend, often after something that turns the conversation to it."""
    return f"{rng.choice(LEAD_INS)} {text}" if rng.random() < chance else text


def _chat(rng: random.Random, text: str, chance: float = 0.7) -> str:
    """A remark with, sometimes, a sentence more that says nothing new."""
    if text.endswith("?") or rng.random() >= chance:  # a question waits for its answer
        return text
    return f"{text} {rng.choice(ELABORATIONS)}"


def _dress(c: _Context, text: str, *, before: bool = True, after: bool = True, asides: bool = True) -> str:
    """The fact said in passing: maybe a filler or another subject first, maybe something after."""
    first, last = c.rng.random(), c.rng.random()
    if before and first < 0.2:
        text = f"{c.pick(PREAMBLES)} {text}"
    elif before and asides and first < 0.4:
        text = f"{_aside(c)} {text}"
    elif before and first < 0.6:
        text = f"{c.pick(FILLERS)} {text}"
    if after and last < 0.2:
        text = f"{text} {c.pick(AFTERTHOUGHTS)}"
    elif after and asides and last < 0.4:
        text = f"{text} {_aside(c)}"
    elif after and last < 0.6:
        text = f"{text} {c.pick(ELABORATIONS)}"
    return _tidy(text)


@dataclass(frozen=True)
class _Telling:
    """The ways one fact may be told; every template takes ``[a|b]`` alternatives and ``{gaps}``.

    said: the owner says it in one turn (after a ``lead`` from the friend, sometimes);
    asks / replies: the friend asks about the subject, the owner answers without naming it;
    opens / probes / answers: the owner brings the subject up, the friend asks for more, the owner
    answers in a word or two.
    """

    said: Sequence[str]
    asks: Sequence[str] = ()
    replies: Sequence[str] = ()
    opens: Sequence[str] = ()
    probes: Sequence[str] = ()
    answers: Sequence[str] = ()
    leads: Sequence[str] = ()
    reactions: Sequence[str] = ()
    more: Sequence[str] = ()
    ask_holds_answer: bool = False  # the ask says part of the answer ("Want some olives?"): both are evidence
    asides: bool = True  # whether the owner's turns may carry a remark on another subject


TELLING_WEIGHTS = {"said": 0.65, "asked": 0.2, "opened": 0.15}


def _address(rng: random.Random, text: str, name: str, chance: float = 0.35) -> str:
    """Sometimes the friend's name in a reply ("Wow, congratulations, Rosa!"), as friends talk: a
    person's name is in many turns that say nothing about them."""
    if rng.random() >= chance:
        return text
    end = re.search(r"[.!?]", text)
    if end is None:
        return f"{text}, {name}"
    return f"{text[: end.start()]}, {name}{text[end.start() :]}"


def _tell(c: _Context, telling: _Telling, values: Mapping[str, Any], *, when=None) -> _Beat:
    """One fact as an exchange, in one of the ways ``telling`` allows, and which of its lines hold it
    (always the ones that say when, for a dated fact)."""
    dated: set[int] = set()
    lines: list[tuple[bool, str]] = []

    def add(by_owner: bool, pool: Sequence[str], **dressing: bool) -> int:
        template = c.pick(pool)
        if "{when}" in template:
            dated.add(len(lines))
        text = c.say(template, values)
        lines.append((by_owner, _dress(c, text, asides=telling.asides, **dressing) if dressing else text))
        return len(lines) - 1

    forms = ["said"]
    if telling.asks and telling.replies:
        forms.append("asked")
    if telling.opens and telling.probes and telling.answers:
        forms.append("opened")
    form = c.rng.choices(forms, weights=[TELLING_WEIGHTS[form] for form in forms])[0]
    if form == "said":
        if telling.leads and c.rng.random() < 0.5:
            lead = add(False, telling.leads)
            lines[lead] = (False, _address(c.rng, _lead_in(c.rng, lines[lead][1]), c.owner.name))
        evidence = {add(True, telling.said, before=True, after=True)}
    elif form == "asked":
        asked = add(False, telling.asks)
        lines[asked] = (False, _lead_in(c.rng, lines[asked][1]))
        evidence = {add(True, telling.replies, before=False, after=True)}
        if telling.ask_holds_answer or c.rng.random() < 0.25:
            evidence.add(asked)
    else:
        opened = add(True, telling.opens, before=True, after=False)
        probe = add(False, telling.probes)
        lines[probe] = (False, _address(c.rng, lines[probe][1], c.owner.name))
        evidence = {add(True, telling.answers, before=False, after=True)}
        if c.rng.random() < 0.4:
            evidence.add(opened)
    if telling.reactions and c.rng.random() < 0.8:
        reaction = add(False, telling.reactions)
        lines[reaction] = (False, _react(c.rng, lines[reaction][1], c.owner.name))
        if telling.more and c.rng.random() < 0.5:
            more = add(True, telling.more)
            lines[more] = (True, _chat(c.rng, lines[more][1]))
    if when is not None:
        evidence |= dated
    return _Beat(lines=lines, evidence=tuple(sorted(evidence)), when=when)


ECHO_REACTIONS = SHARED["ECHO_REACTIONS"]


def _echo(c: _Context, line: str) -> _Beat:
    """The topic again without the fact; the friend may react."""
    lines = [(True, _dress(c, line))]
    if c.rng.random() < 0.6:
        lines.append((False, _react(c.rng, c.pick(ECHO_REACTIONS), c.owner.name)))
    return _Beat(lines=lines)


def _setup(c: _Context, templates: Sequence[str], values: Mapping[str, Any], reactions: Sequence[str] = ()) -> _Beat:
    """The topic before the fact ("we're thinking of getting a puppy"): same words, another time, no answer."""
    lines = [(True, _dress(c, c.say(c.pick(templates), values)))]
    if c.rng.random() < 0.7:
        lines.append((False, _react(c.rng, c.say(c.pick(reactions or ECHO_REACTIONS), values), c.owner.name)))
    return _Beat(lines=lines)


def _foreshadowed(c: _Context, story: _Story, templates: Sequence[str], values: Mapping[str, Any]) -> _Story:
    """The story with, often, its subject raised sessions before it happens ("got tickets for the gig"):
    the same words, another date, no answer. Its beats move up one."""
    if c.rng.random() >= 0.6:
        return story
    story.beats.insert(0, _setup(c, templates, values))
    for draft in story.questions:
        draft.beats = tuple(beat + 1 for beat in draft.beats)
        draft.dated = None if draft.dated is None else draft.dated + 1
    story.tallies = [(question, part, beat + 1) for question, part, beat in story.tallies]
    return story


NEWS_LEADS = SHARED["NEWS_LEADS"]
CHEERS = SHARED["CHEERS"]
SYMPATHY = SHARED["SYMPATHY"]


# --- The stories ---------------------------------------------------------------------------------

SPECIES = SHARED["SPECIES"]
PET_EVENTS = SHARED["PET_EVENTS"]


def _pet(c: _Context) -> _Story:
    templates = STORIES_TOLD["pet"]
    species, young = c.pick(SPECIES)
    c.mention("species", species)
    pet = c.fresh(PET_NAMES)
    woman = c.rng.random() < 0.5
    ps, po, pp = ("she", "her", "her") if woman else ("he", "him", "his")
    values = {"pet": pet, "species": species, "young": young, "ps": ps, "po": po, "pp": pp, "Ps": ps.capitalize()}
    values["months"] = c.pick((2, 3, 4, 5, 6, 7, 9))
    beats = []
    if c.rng.random() < 0.6:
        beats.append(
            _setup(
                c,
                templates["setup"]["templates"],
                values,
                templates["setup"]["reactions"],
            )
        )
    adopted = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(**templates["telling1"], leads=NEWS_LEADS),
            values,
        )
    )
    event, question, answer, happened = c.pick(PET_EVENTS)
    phrase, when = c.when()
    event_values = values | {"when": phrase}
    befell = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(
                said=(event.replace("{who}", "{pet}"),),
                asks=templates["telling2"]["asks"],
                replies=(
                    "[Don't ask.|Ha, funny you should ask.|Eventful!|Oh, where to start.] " + event.replace("{who}", "{Ps}"),
                ),
                leads=templates["telling2"]["leads"],
                reactions=SYMPATHY + templates["telling2"]["reactions"],
            ),
            event_values,
            when=when,
        )
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    by_name = c.rng.random() < 0.5
    return _Story(
        beats=beats,
        questions=[
            _Draft(
                "single-hop",
                c.ask(
                    *templates["question"],
                    X=X,
                    s=species,
                    p=c.owner.possessive,
                ),
                pet,
                (adopted,),
            ),
            _Draft("multi-hop", question.format(X=X, species=species), answer, (adopted, befell)),
            _Draft(
                "temporal",
                f"When did {pet} {happened}?" if by_name else f"When did {X}'s {species} {happened}?",
                "{date}",
                (befell,) if by_name else (adopted, befell),
                dated=befell,
            ),
        ],
    )


COMPANY_KINDS = SHARED["COMPANY_KINDS"]
JOB_PERKS = SHARED["JOB_PERKS"]


def _job(c: _Context) -> _Story:
    templates = STORIES_TOLD["job"]
    company = f"{c.rare()} {c.pick(COMPANY_KINDS)}"
    perk = c.pick(JOB_PERKS)
    phrase, when = c.when()
    values = {"company": company, "perk": perk, "when": phrase, "weekday": c.pick(WEEKDAYS[:5])}
    beats = []
    if c.rng.random() < 0.6:
        beats.append(
            _setup(
                c,
                templates["setup"]["templates"],
                values,
                templates["setup"]["reactions"],
            )
        )
    signed = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(
                said=templates["telling"]["said"],
                asks=templates["telling"]["asks"],
                replies=templates["telling"]["replies"],
                leads=NEWS_LEADS,
                reactions=CHEERS + templates["telling"]["reactions"],
                more=templates["telling"]["more"],
            ),
            values,
            when=when,
        )
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    return _Story(
        beats,
        [
            _Draft(
                "single-hop",
                c.ask(*templates["question1"], X=X),
                company,
                (signed,),
            ),
            _Draft(
                "single-hop",
                c.ask(*templates["question2"], X=X),
                perk,
                (signed,),
            ),
            _Draft(
                "temporal",
                c.ask(*templates["question3"], X=X, company=company),
                "{date}",
                (signed,),
                dated=signed,
            ),
        ],
    )


def _move(c: _Context) -> _Story:
    templates = STORIES_TOLD["move"]
    city = c.mention("city", c.fresh(CITIES))
    phrase, when = c.when()
    values = {"city": city, "when": phrase, "weekday": c.pick(WEEKDAYS)}
    beats = []
    if c.rng.random() < 0.5:
        beats.append(
            _setup(
                c,
                templates["setup"]["templates"],
                values,
                templates["setup"]["reactions"],
            )
        )
    signed = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(**templates["telling1"], leads=NEWS_LEADS),
            values,
            when=when,
        )
    )
    X = c.owner.name
    questions = [
        _Draft(
            "temporal",
            c.ask(*templates["question1"], X=X, city=city),
            "{date}",
            (signed,),
            dated=signed,
        )
    ]
    moved_to = city
    if c.rng.random() < 0.35:  # the move changes: the newer turn answers where
        moved_to = c.mention("city", c.fresh(CITIES))
        changed = len(beats)
        beats.append(
            _tell(
                c,
                _Telling(**templates["telling2"]),
                values | {"other": moved_to},
            )
        )
        questions.append(
            _Draft(
                "multi-hop",
                f"Where did {X} first plan to move, and where did {c.owner.subject} end up going?",
                f"{city}, then {moved_to}",
                (signed, changed),
            )
        )
        where = (changed,)
    else:
        where = (signed,)
    questions.append(
        _Draft(
            "single-hop",
            c.ask(
                *templates["question2"],
                X=X,
            ),
            moved_to,
            where,
        )
    )
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    return _Story(beats, questions)


RACES = SHARED["RACES"]


def _race(c: _Context) -> _Story:
    templates = STORIES_TOLD["race"]
    race, clock = c.pick(RACES)
    c.mention("race", race)
    city = c.mention("city", c.pick(CITIES))
    finish = clock.format(m=c.rng.randint(41, 59), s=c.rng.randint(0, 59))
    phrase, when = c.when()
    values = {"city": city, "race": race, "when": phrase, "finish": finish, "weekday": c.pick(WEEKDAYS)}
    beats = []
    if c.rng.random() < 0.6:  # signed up before: the same words, another date
        beats.append(
            _setup(
                c,
                templates["setup"]["templates"],
                values,
                templates["setup"]["reactions"],
            )
        )
    ran = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(**templates["telling"]),
            values,
            when=when,
        )
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    return _Story(
        beats=beats,
        questions=[
            _Draft(
                "temporal",
                c.ask(
                    *templates["question1"],
                    X=X,
                    city=city,
                    race=race,
                ),
                "{date}",
                (ran,),
                dated=ran,
            ),
            _Draft(
                "single-hop",
                c.ask(
                    *templates["question2"],
                    X=X,
                    city=city,
                    race=race,
                ),
                finish,
                (ran,),
            ),
        ],
        tallies=[("In which cities has {X} run races?", city, ran)],
    )


def _trip(c: _Context) -> _Story:
    templates = STORIES_TOLD["trip"]
    place = c.mention("place", c.fresh(PLACES))
    days = c.rng.randint(4, 16)
    phrase, when = c.when()
    values = {
        "place": place,
        "days": days,
        "when": phrase,
        "detail": c.pick(templates["choices"]),
    }
    beats = []
    if c.rng.random() < 0.5:
        beats.append(
            _setup(
                c,
                templates["setup"]["templates"],
                values,
                templates["setup"]["reactions"],
            )
        )
    went = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(**templates["telling"], ask_holds_answer=True),
            values,
            when=when,
        )
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    return _Story(
        [*beats],
        [
            _Draft(
                "single-hop",
                c.ask(*templates["question1"], X=X, place=place),
                f"{days} days",
                (went,),
            ),
            _Draft(
                "temporal",
                c.ask(
                    *templates["question2"],
                    X=X,
                    place=place,
                ),
                "{date}",
                (went,),
                dated=went,
            ),
        ],
        tallies=[("Which places has {X} been on holiday to?", place, went)],
    )


def _lessons(c: _Context) -> _Story:
    templates = STORIES_TOLD["lessons"]
    instrument = c.mention("instrument", c.fresh(INSTRUMENTS))
    teacher = f"{c.pick(('Mr', 'Ms', 'Mrs'))} {c.rare()}"
    weekday = c.pick(WEEKDAYS[:5])
    values = {"instrument": instrument, "teacher": teacher, "weekday": weekday}
    beat = _tell(
        c,
        _Telling(**templates["telling"]),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(
                    *templates["question"],
                    X=X,
                ),
                instrument,
                (0,),
            ),
            _Draft("single-hop", f"Who is {teacher}?", f"{X}'s {instrument} teacher", (0,))
            if c.rng.random() < 0.5
            else _Draft("single-hop", f"Who teaches {X} the {instrument}?", teacher, (0,)),
            _Draft("single-hop", f"On which evening does {X} have {instrument} lessons?", weekday, (0,)),
        ],
        tallies=[("What has {X} signed up to learn?", f"the {instrument}", 0)],
    )


def _engaged(c: _Context) -> _Story:
    templates = STORIES_TOLD["engaged"]
    relation = c.pick(templates["choices"])
    relative = c.fresh(PEOPLE)
    partner = c.fresh(PEOPLE)
    city = c.mention("city", c.pick(CITIES))
    phrase, when = c.when()
    values = {"relation": relation, "relative": relative, "partner": partner, "city": city, "when": phrase}
    first = _tell(
        c,
        _Telling(**templates["telling1"]),
        values,
    )
    second = _tell(
        c,
        _Telling(
            said=templates["telling2"]["said"],
            opens=templates["telling2"]["opens"],
            probes=templates["telling2"]["probes"],
            answers=templates["telling2"]["answers"],
            leads=NEWS_LEADS,
            reactions=CHEERS + templates["telling2"]["reactions"],
            more=templates["telling2"]["more"],
        ),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    story = _Story(
        [first, second],
        [
            _Draft("multi-hop", f"Who is {X}'s {relation} engaged to?", partner, (0, 1)),
            _Draft("single-hop", f"Which city did {X}'s {relation} move to?", city, (0,)),
            _Draft("temporal", f"When did {relative} get engaged?", "{date}", (1,), dated=1)
            if c.rng.random() < 0.6
            else _Draft("temporal", f"When did {X}'s {relation} get engaged?", "{date}", (0, 1), dated=1),
        ],
        tallies=[("What family news has {X} shared?", f"{relative} got engaged to {partner}", 1)],
    )
    return _foreshadowed(
        c,
        story,
        templates["foreshadowing"]["templates"],
        values,
    )


def _taste(c: _Context) -> _Story:
    templates = STORIES_TOLD["taste"]
    food = c.mention("food", c.fresh(FOODS))
    hates = c.rng.random() < 0.5
    if hates:
        telling = _Telling(**templates["telling1"], ask_holds_answer=True)
        questions = [
            _Draft(
                "single-hop",
                c.ask(
                    *templates["question1"],
                    X=c.owner.name,
                ),
                food,
                (0,),
            )
        ]
    else:
        telling = _Telling(**templates["telling2"], ask_holds_answer=True)
        questions = [
            _Draft(
                "single-hop",
                c.ask(
                    *templates["question2"],
                    X=c.owner.name,
                ),
                food,
                (0,),
            )
        ]
    beat = _tell(c, telling, {"food": food})
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story([beat], questions)


def _plans(c: _Context) -> _Story:
    templates = STORIES_TOLD["plans"]
    first_choice = c.mention("place", c.fresh(PLACES))
    second_choice = c.mention("place", c.fresh(PLACES))
    month = c.pick(MONTHS)
    reason = c.pick(templates["choices"])
    values = {"place": first_choice, "other": second_choice, "month": month, "reason": reason}
    first = _tell(
        c,
        _Telling(**templates["telling1"]),
        values,
    )
    second = _tell(
        c,
        _Telling(**templates["telling2"]),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story(
        [first, second],
        [
            _Draft(
                "multi-hop",
                f"Where did {X} first plan to go in {month}, and where did {c.owner.subject} book in the end?",
                f"{first_choice}, then {second_choice}",
                (0, 1),
            ),
            _Draft("single-hop", c.ask(*templates["question"], X=X, month=month), second_choice, (1,)),
            _Draft("single-hop", f"Why did {X} change {c.owner.possessive} {month} holiday plans?", reason, (1,)),
        ],
    )


def _fundraiser(c: _Context) -> _Story:
    templates = STORIES_TOLD["fundraiser"]
    event = c.pick(templates["choices"])
    values = {"event": event, "money": c.rng.choice(range(240, 3000, 5))}
    beat = _tell(
        c,
        _Telling(
            said=templates["telling"]["said"],
            asks=templates["telling"]["asks"],
            replies=templates["telling"]["replies"],
            reactions=CHEERS + templates["telling"]["reactions"],
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(*templates["question"], X=X, event=event),
                f"${values['money']}",
                (0,),
            )
        ],
        tallies=[("What has {X} volunteered at or raised money with?", f"a {event}", 0)],
    )


ITEMS = SHARED["ITEMS"]


def _purchase(c: _Context) -> _Story:
    templates = STORIES_TOLD["purchase"]
    item = c.fresh(ITEMS)
    colour = c.pick(COLOURS)
    values = {"item": item, "colour": colour}
    beat = _tell(
        c,
        _Telling(**templates["telling"]),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    return _Story(
        tallies=[("What has {X} bought for {P}self lately?", f"a {colour} {item}", 0)],
        beats=[beat],
        questions=[
            _Draft(
                "single-hop",
                c.ask(*templates["question"], X=X, item=item),
                colour,
                (0,),
            )
        ],
    )


ALLERGENS = SHARED["ALLERGENS"]


def _allergy(c: _Context) -> _Story:
    templates = STORIES_TOLD["allergy"]
    values = {"allergen": c.fresh(ALLERGENS), "weekday": c.pick(WEEKDAYS)}
    beat = _tell(
        c,
        _Telling(
            said=templates["telling"]["said"],
            asks=templates["telling"]["asks"],
            replies=templates["telling"]["replies"],
            leads=templates["telling"]["leads"],
            reactions=SYMPATHY + templates["telling"]["reactions"],
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(*templates["question"], X=X),
                values["allergen"],
                (0,),
            )
        ],
        tallies=[("What allergies or injuries has {X} had?", f"an allergy to {values['allergen']}", 0)],
    )


VENUES = SHARED["VENUES"]


def _concert(c: _Context) -> _Story:
    templates = STORIES_TOLD["concert"]
    band = c.pick(templates["choices"])
    band = band.format(r=c.rare())
    phrase, when = c.when()
    values = {"band": band, "venue": c.pick(VENUES), "when": phrase}
    beat = _tell(
        c,
        _Telling(**templates["telling"]),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    story = _Story(
        tallies=[("Which bands has {X} seen live?", band, 0)],
        beats=[beat],
        questions=[
            _Draft(
                "temporal",
                c.ask(
                    *templates["question"],
                    X=X,
                    venue=values["venue"],
                    band=band,
                ),
                "{date}",
                (0,),
                dated=0,
            ),
            _Draft("single-hop", f"Where did {X} see {band} play?", values["venue"], (0,)),
        ],
    )
    return _foreshadowed(
        c,
        story,
        templates["foreshadowing"]["templates"],
        values,
    )


def _restaurant(c: _Context) -> _Story:
    templates = STORIES_TOLD["restaurant"]
    restaurant = f"{c.rare()} {c.pick(templates['choices'])}"
    dish = c.mention("dish", c.pick(DISHES))
    phrase, when = c.when()
    values = {"restaurant": restaurant, "dish": dish, "when": phrase}
    beat = _tell(
        c,
        _Telling(**templates["telling"]),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    story = _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(*templates["question1"], X=X, r=restaurant),
                dish,
                (0,),
            ),
            _Draft(
                "temporal",
                c.ask(
                    *templates["question2"],
                    X=X,
                    dish=dish,
                    s=c.owner.subject,
                    r=restaurant,
                ),
                "{date}",
                (0,),
                dated=0,
            ),
        ],
        tallies=[("Which restaurants has {X} talked about?", restaurant, 0)],
    )
    return _foreshadowed(
        c,
        story,
        templates["foreshadowing"]["templates"],
        values,
    )


def _book(c: _Context) -> _Story:
    templates = STORIES_TOLD["book"]
    title = f"The {c.rare()} {c.pick(templates['choices'])}"
    author = f"{c.pick(PEOPLE)} {c.rare()}"
    values = {"title": title, "author": author}
    said, opinion = c.pick(
        (
            templates["lines1"],
            templates["lines2"],
            ("Book club picked {title} by {author} this month. Not my thing at all.", f"not for {c.owner.object}"),
        )
    )
    beat = _tell(
        c,
        _Telling(**templates["telling"], said=(said,)),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    questions = [_Draft("single-hop", f"What did {X} think of {title}?", opinion, (0,))]
    if author in beat.lines[beat.evidence[0]][1]:
        questions.append(_Draft("single-hop", c.ask(*templates["question"], title=title), author, (0,)))
    return _Story([beat], questions, tallies=[("Which books has {X} mentioned?", title, 0)])


VOLUNTEERING = SHARED["VOLUNTEERING"]


def _volunteer(c: _Context) -> _Story:
    templates = STORIES_TOLD["volunteer"]
    values = {"place": c.pick(VOLUNTEERING), "weekday": c.pick(WEEKDAYS)}
    beat = _tell(
        c,
        _Telling(**templates["telling"], leads=NEWS_LEADS),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"On which day does {X} volunteer at the {values['place']}?", values["weekday"], (0,)),
            _Draft(
                "single-hop",
                c.ask(*templates["question"], X=X, p=c.owner.possessive),
                values["place"],
                (0,),
            ),
        ],
        tallies=[("What has {X} volunteered at or raised money with?", f"volunteering at the {values['place']}", 0)],
    )


def _birthday(c: _Context) -> _Story:
    templates = STORIES_TOLD["birthday"]
    child = c.fresh(PEOPLE)
    kid = c.pick(templates["choices1"])
    age = c.rng.randint(3, 12)
    theme = c.pick(templates["choices2"])
    values = {"kid": kid, "child": child, "age": age, "theme": theme}
    beat = _tell(
        c,
        _Telling(**templates["telling"]),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    questions = [_Draft("single-hop", f"What theme did {X} pick for {child}'s birthday?", theme, (0,))]
    if str(age) in " ".join(text for _, text in beat.lines):
        questions.append(_Draft("single-hop", f"How old is {child} turning?", str(age), (0,)))
    return _Story([beat], questions, tallies=[("What family news has {X} shared?", f"{child} turning {age}", 0)])


def _course(c: _Context) -> _Story:
    templates = STORIES_TOLD["course"]
    subject = c.fresh(SUBJECTS)
    college = f"{c.rare()} College"
    values = {"subject": subject, "college": college, "weekday": c.pick(WEEKDAYS[:5])}
    beat = _tell(
        c,
        _Telling(**templates["telling"]),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(
                    *templates["question"],
                    X=X,
                    college=college,
                ),
                subject,
                (0,),
            )
        ],
        tallies=[("What has {X} signed up to learn?", subject, 0)],
    )


ROADS = SHARED["ROADS"]


def _breakdown(c: _Context) -> _Story:
    templates = STORIES_TOLD["breakdown"]
    phrase, when = c.when()
    values = {"road": c.pick(ROADS), "cause": c.pick(templates["choices"]), "when": phrase}
    beat = _tell(
        c,
        _Telling(**templates["telling"], reactions=SYMPATHY),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    story = _Story(
        [beat],
        [
            _Draft(
                "temporal",
                c.ask(
                    *templates["question1"],
                    X=X,
                    road=values["road"],
                    cause=values["cause"],
                ),
                "{date}",
                (0,),
                dated=0,
            ),
            _Draft(
                "single-hop",
                c.ask(*templates["question2"], X=X),
                values["cause"],
                (0,),
            ),
        ],
    )
    return _foreshadowed(
        c,
        story,
        templates["foreshadowing"]["templates"],
        values,
    )


def _gift(c: _Context) -> _Story:
    templates = STORIES_TOLD["gift"]
    partner = c.fresh(PEOPLE)
    gift = c.pick(templates["choices"])
    values = {"partner": partner, "gift": gift}
    beat = _tell(
        c,
        _Telling(**templates["telling"], ask_holds_answer=True),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"What did {X} give {partner} for their anniversary?", gift, (0,)),
            _Draft(
                "single-hop",
                c.ask(*templates["question"], X=X),
                partner,
                (0,),
            ),
        ],
    )


def _injury(c: _Context) -> _Story:
    templates = STORIES_TOLD["injury"]
    sport = c.mention("sport", c.fresh(SPORTS))
    phrase, when = c.when()
    values = {"part": c.pick(templates["choices"]), "sport": sport, "when": phrase}
    beat = _tell(
        c,
        _Telling(**templates["telling"], reactions=SYMPATHY),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [c.say(line, values) for line in templates["echoes"]]
    story = _Story(
        [beat],
        [
            _Draft(
                "temporal",
                c.ask(
                    *templates["question1"],
                    X=X,
                    p=c.owner.possessive,
                    part=values["part"],
                    sport=sport,
                ),
                "{date}",
                (0,),
                dated=0,
            ),
            _Draft(
                "single-hop",
                c.ask(
                    *templates["question2"],
                    X=X,
                    s=c.owner.subject,
                    p=c.owner.possessive,
                    part=values["part"],
                ),
                sport,
                (0,),
            ),
        ],
        tallies=[
            ("What allergies or injuries has {X} had?", f"a hurt {values['part']}", 0),
        ],
    )
    return _foreshadowed(
        c,
        story,
        templates["foreshadowing"]["templates"],
        values,
    )


def _habit(c: _Context) -> _Story:
    templates = STORIES_TOLD["habit"]
    habit = c.pick(templates["choices"])
    beat = _tell(
        c,
        _Telling(
            said=templates["telling"]["said"],
            asks=templates["telling"]["asks"],
            replies=templates["telling"]["replies"],
            leads=templates["telling"]["leads"],
            reactions=CHEERS + templates["telling"]["reactions"],
        ),
        {"habit": habit},
    )
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(*templates["question"], X=c.owner.name, p=c.owner.possessive),
                habit,
                (0,),
            )
        ],
    )


def _garden(c: _Context) -> _Story:
    templates = STORIES_TOLD["garden"]
    plant = c.pick(templates["choices"])
    values = {"plant": plant, "count": c.rng.randint(3, 24)}
    beat = _tell(
        c,
        _Telling(**templates["telling"], ask_holds_answer=True),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    return _Story(
        [beat],
        [_Draft("single-hop", f"How many {plant} did {X} plant?", str(values["count"]), (0,))],
    )


PROJECTS = SHARED["PROJECTS"]


def _manager(c: _Context) -> _Story:
    templates = STORIES_TOLD["manager"]
    manager = c.fresh(PEOPLE)
    phrase, when = c.when()
    values = {"manager": manager, "project": c.pick(PROJECTS), "when": phrase}
    first = _tell(
        c,
        _Telling(**templates["telling1"]),
        values,
    )
    second = _tell(
        c,
        _Telling(
            said=templates["telling2"]["said"],
            asks=templates["telling2"]["asks"],
            replies=templates["telling2"]["replies"],
            leads=templates["telling2"]["leads"],
            reactions=CHEERS + templates["telling2"]["reactions"],
        ),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in templates["echoes"]]
    story = _Story(
        [first, second],
        [
            _Draft("single-hop", c.ask(*templates["question1"], X=X), manager, (0,)),
            _Draft("multi-hop", f"What did {X}'s manager put {c.owner.object} in charge of?", values["project"], (0, 1)),
            _Draft(
                "temporal",
                c.ask(
                    *templates["question2"],
                    X=X,
                    o=c.owner.object,
                    project=values["project"],
                ),
                "{date}",
                (1,),
                dated=1,
            ),
        ],
    )
    return _foreshadowed(
        c,
        story,
        templates["foreshadowing"]["templates"],
        values,
    )


# --- What a person is like: said in several sessions, never named, asked about by inference ---------


@dataclass(frozen=True)
class _Trait:
    answer: str  # {s}, {o}: the person's pronouns
    remarks: tuple[str, ...]  # what the person says in passing, one a turn
    more: tuple[str, ...]  # what may follow a remark, on the same subject
    questions: tuple[str, ...]  # what needs the inference; the first the most concrete


TRAITS = tuple(_Trait(**trait) for trait in SHARED["TRAITS"])
# (the field a person works in, things said about work that never name it, what may follow them)
OCCUPATIONS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = SHARED["OCCUPATIONS"]
OCCUPATION_QUESTIONS = SHARED["OCCUPATION_QUESTIONS"]
TRAIT_LEADS = SHARED["TRAIT_LEADS"]
TRAIT_REACTIONS = SHARED["TRAIT_REACTIONS"]


def _inferred(
    c: _Context, answer: str, remarks: Sequence[str], more: Sequence[str], questions: Sequence[str], *, used: set[str]
) -> _Story | None:
    """One to three remarks, sessions apart, and a question that needs them but says none of their words."""
    count = c.rng.choices((1, 2, 3), weights=(0.3, 0.5, 0.2))[0]
    # What people are like comes up while talking about it, not beside another subject.
    beats = []
    for remark in c.rng.sample(list(remarks), count):
        said = remark + (" " + c.pick(more) if c.rng.random() < 0.6 else "")
        beats.append(_tell(c, _Telling(said=(said,), leads=TRAIT_LEADS, reactions=TRAIT_REACTIONS, asides=False), {}))
    heard = set().union(*(content_words(beat.lines[index][1]) for beat in beats for index in beat.evidence))
    X = c.owner.name
    asked = [
        text
        for template in questions
        if (text := _say(c.rng, template, {"X": X, "p": c.owner.possessive})) not in used
        and not content_words(text, ignore=[X]) & heard
    ]
    if not asked:
        return None
    question = asked[0] if c.rng.random() < 0.6 else c.pick(asked)
    used.add(question)
    values = {"s": c.owner.subject, "o": c.owner.object}
    return _Story(beats, [_Draft("open-domain", question, answer.format_map(values), tuple(range(len(beats))))])


def _traits(c: _Context, count: int) -> list[_Story]:
    """What the owner is like (``count`` traits) and what they do for a living, each told in passing."""
    used: set[str] = set()
    stories = []
    for trait in c.rng.sample(TRAITS, count):
        story = _inferred(c, trait.answer, trait.remarks, trait.more, trait.questions, used=used)
        if story is not None:
            stories.append(story)
    occupation, remarks, more = c.pick(OCCUPATIONS)
    story = _inferred(c, occupation, remarks, more, OCCUPATION_QUESTIONS, used=used)
    if story is not None:
        stories.append(story)
    return stories


# --- Small talk: the same words, no facts ----------------------------------------------------------

SMALL_TALK: tuple[tuple[str, ...], ...] = SHARED["SMALL_TALK"]
GREETINGS = SHARED["GREETINGS"]
FAREWELLS = SHARED["FAREWELLS"]


# Remarks on other subjects that a turn may carry beside its fact (small talk openers that are no question).
ASIDES = tuple(lines[0] for lines in SMALL_TALK if not lines[0].endswith("?") and "{you}" not in lines[0])


def _aside(c: _Context) -> str:
    return _reword(c.rng, c.pick(ASIDES)).format_map(_Slots(c.rng, c.other.name, c.mentioned))


class _Slots(dict):
    """Fills a small-talk template's gaps, half the time with the pair's own cities, foods, races...:
    real conversations come back to the same places and things in turns that answer nothing."""

    POOLS: Mapping[str, Sequence[str]] = {
        "show": SHOWS,
        "weekday": WEEKDAYS,
        "species": [species for species, _ in SPECIES],
        "city": CITIES,
        "place": PLACES,
        "race": [race for race, _ in RACES],
        "food": FOODS,
        "dish": DISHES,
        "sport": SPORTS,
        "instrument": INSTRUMENTS,
        "road": ROADS,
        "colour": COLOURS,
    }

    def __init__(self, rng: random.Random, you: str, mentioned: Mapping[str, Sequence[str]]) -> None:
        super().__init__(you=you)
        self.rng = rng
        self.mentioned = mentioned

    def __missing__(self, name: str) -> str:
        own = self.mentioned.get(name)
        if own and self.rng.random() < 0.5:
            return self.rng.choice(own)
        return self.rng.choice(self.POOLS[name])


# The kinds of story, and how many each speaker may tell (events recur; a new dog does not).
STORIES: tuple[tuple[Callable[[_Context], _Story], int], ...] = (
    (_pet, 1),
    (_job, 1),
    (_move, 1),
    (_race, 2),
    (_trip, 2),
    (_lessons, 1),
    (_engaged, 1),
    (_taste, 2),
    (_plans, 1),
    (_fundraiser, 1),
    (_purchase, 2),
    (_allergy, 1),
    (_concert, 2),
    (_restaurant, 2),
    (_book, 2),
    (_volunteer, 1),
    (_birthday, 1),
    (_course, 1),
    (_breakdown, 1),
    (_gift, 1),
    (_injury, 1),
    (_habit, 1),
    (_garden, 1),
    (_manager, 1),
)
TRAIT_COUNT = 3  # traits per person, besides what they do for a living


# --- Putting a pair's conversation together ---------------------------------------------------------


def _event_date(session_date: datetime, when: tuple[int | None, int | None]) -> date:
    days, weekday = when
    day = session_date.date()
    if days is not None:
        return day - timedelta(days=days)
    back = (day.weekday() - weekday) % 7 or 7
    return day - timedelta(days=back)


def _schedule(rng: random.Random, stories: list[_Story], session_count: int) -> list[list[tuple[int, int]]]:
    """Which beats (story index, beat index) each session tells; a story's beats go in order, sessions apart."""
    load = [0] * session_count
    plan: list[list[tuple[int, int]]] = [[] for _ in range(session_count)]

    def lightest(candidates: range) -> int:
        return min(candidates, key=lambda index: (load[index], rng.random()))

    for story_index, story in enumerate(stories):
        count = len(story.beats)
        gap = max(1, min(3, (session_count - 1) // max(1, 2 * (count - 1)))) if count > 1 else 0  # sessions between beats
        earliest = 0
        for beat_index in range(count):
            latest = session_count - 1 - gap * (count - 1 - beat_index)
            session = lightest(range(earliest, latest + 1))
            plan[session].append((story_index, beat_index))
            load[session] += len(story.beats[beat_index].lines)
            earliest = session + gap
    return plan


HANDOVERS = SHARED["HANDOVERS"]
ACKNOWLEDGEMENTS = SHARED["ACKNOWLEDGEMENTS"]

_Unit = tuple[Sequence[tuple[int, str]] | tuple[str, ...], int | None]  # a beat's lines and its position, or small talk


def _session_lines(
    rng: random.Random,
    people: tuple[Person, Person],
    beats: list[tuple[int, _Beat]],
    length: int,
    longest: int,
    mentioned: Mapping[str, Sequence[str]],
) -> tuple[list[tuple[int, str]], dict[int, list[int]]]:
    """The turns of one session as (speaker index, text), about ``length`` and at most ``longest`` of
    them, and where each beat's evidence landed (position of the beat in ``beats`` -> turn indexes)."""
    units: list[_Unit] = []
    for position, (owner, beat) in enumerate(beats):
        units.append(([(owner if by_owner else 1 - owner, text) for by_owner, text in beat.lines], position))
    told = sum(len(lines) for lines, _ in units)
    chatter = iter(rng.sample(SMALL_TALK, len(SMALL_TALK)))  # no small talk twice in one session
    while told < length - 4 and (template := next(chatter, None)) is not None:
        units.append((template, None))  # around the facts; greeting, farewell and a hand-over aside
        told += len(template)
    rng.shuffle(units)
    starter = rng.randrange(2)
    greeting, farewell = rng.choice(GREETINGS), rng.choice(FAREWELLS)
    while True:
        turns, evidence_at = _assemble(rng, people, units, starter, greeting, farewell, beats, mentioned)
        # Longer than drawn: drop small talk; longer than allowed: echoes and set-ups too; facts stay.
        small_talk = [index for index, (_, position) in enumerate(units) if position is None]
        bare = [index for index, (_, position) in enumerate(units) if position is not None and not beats[position][1].evidence]
        if len(turns) > length and small_talk:
            del units[small_talk[-1]]
        elif len(turns) > longest and bare:
            del units[bare[-1]]
        else:
            return turns, evidence_at


def _assemble(
    rng: random.Random,
    people: tuple[Person, Person],
    units: list[_Unit],
    starter: int,
    greeting: tuple[str, str],
    farewell: tuple[str, str],
    beats: list[tuple[int, _Beat]],
    mentioned: Mapping[str, Sequence[str]],
) -> tuple[list[tuple[int, str]], dict[int, list[int]]]:
    turns = [
        (starter, greeting[0].format(you=people[1 - starter].name)),
        (1 - starter, _chat(rng, greeting[1].format(you=people[starter].name))),
    ]
    evidence_at: dict[int, list[int]] = {}
    for lines, position in units:
        if position is None:  # small talk: whoever did not speak last starts it
            first = 1 - turns[-1][0]
            for offset, line in enumerate(lines):
                speaker, addressed = (first + offset) % 2, people[(first + offset + 1) % 2].name
                text = _reword(rng, line).format_map(_Slots(rng, addressed, mentioned))
                turns.append((speaker, _chat(rng, _address(rng, text, addressed) if offset else text)))
            continue
        owner = beats[position][0]
        if lines[0][0] == turns[-1][0]:  # the same speaker twice: the other one speaks first
            speaker = 1 - turns[-1][0]
            said = _lead_in(rng, rng.choice(HANDOVERS)) if lines[0][0] == owner else rng.choice(ACKNOWLEDGEMENTS)
            turns.append((speaker, _address(rng, said, people[1 - speaker].name)))
        evidence_at[position] = [len(turns) + index for index in beats[position][1].evidence]
        turns.extend(lines)
    closer = 1 - turns[-1][0]
    turns += [(closer, farewell[0]), (1 - closer, farewell[1])]
    return turns, evidence_at


def _stories(
    rng: random.Random, people: tuple[Person, Person], wanted: int, session_count: int
) -> tuple[list[_Story], dict[str, list[str]]]:
    """The pair's stories: both speakers draw from the same kinds, so the friend's dog is the hardest
    distractor. Every kind's first telling comes before any second one, so a short conversation gets
    variety; each person's traits and work come on top. Also the pair's own cities, foods... for small talk."""
    kinds = []
    for telling in range(max(times for _, times in STORIES)):
        told = [(speaker, builder) for speaker in (0, 1) for builder, times in STORIES if times > telling]
        rng.shuffle(told)
        kinds += told
    used: set[str] = {people[0].name, people[1].name}
    mentioned: dict[str, list[str]] = {}
    stories = []
    for speaker in (0, 1):
        context = _Context(rng=rng, owner=people[speaker], other=people[1 - speaker], used=used, mentioned=mentioned)
        for story in _traits(context, TRAIT_COUNT):
            story.owner = speaker
            stories.append(story)
    for speaker, builder in kinds[:wanted]:
        context = _Context(rng=rng, owner=people[speaker], other=people[1 - speaker], used=used, mentioned=mentioned)
        story = builder(context)
        story.owner = speaker
        story.echoes = context.echoes
        stories.append(story)
    return [story for story in stories if len(story.beats) <= session_count], mentioned


def _user(index: int, people: tuple[Person, Person], *, seed: int, sessions: tuple[int, int], turns: tuple[int, int]) -> User:
    rng = random.Random(f"{seed}:user:{index}")
    session_count = rng.randint(*sessions)
    dates = [
        datetime(2022, 1, 3, tzinfo=UTC)
        + timedelta(days=rng.randint(0, 400), hours=rng.randint(8, 21), minutes=rng.randint(0, 59))
    ]
    for _ in range(session_count - 1):
        dates.append(dates[-1] + timedelta(days=rng.randint(6, 30), hours=rng.randint(-6, 6), minutes=rng.randint(0, 59)))

    stories, mentioned = _stories(rng, people, max(2, round(session_count * 1.9)), session_count)
    plan = _schedule(rng, stories, session_count)
    # One to four echoes of each story, in later sessions than the story began (echoes look back).
    echoes: list[list[tuple[int, _Beat]]] = [[] for _ in range(session_count)]
    began = {story: number for number, told in enumerate(plan) for story, beat in told if beat == 0}
    for story_index, story in enumerate(stories):
        later = list(range(began[story_index] + 1, session_count))
        for line in rng.sample(story.echoes, min(len(story.echoes), rng.randint(1, 4))) if later else []:
            speaker = _Context(rng=rng, owner=people[story.owner], other=people[1 - story.owner], mentioned=mentioned)
            echoes[rng.choice(later)].append((story.owner, _echo(speaker, line)))
    built: list[Session] = []
    located: dict[tuple[int, int], tuple[list[str], datetime]] = {}  # (story, beat) -> (evidence dialog ids, session date)
    for number, (started, told) in enumerate(zip(dates, plan, strict=True), start=1):
        beats = [(stories[story].owner, stories[story].beats[beat]) for story, beat in told]
        lines, evidence_at = _session_lines(rng, people, beats + echoes[number - 1], rng.randint(*turns), turns[1], mentioned)
        for position, (story, beat) in enumerate(told):
            located[(story, beat)] = ([f"D{number}:{turn + 1}" for turn in evidence_at.get(position, ())], started)
        built.append(
            Session(
                number=number,
                date=started,
                turns=tuple(
                    Turn(f"D{number}:{offset}", people[speaker].name, text)
                    for offset, (speaker, text) in enumerate(lines, start=1)
                ),
            )
        )

    questions = []
    for story_index, story in enumerate(stories):
        for draft in story.questions:
            answer = draft.answer
            if draft.dated is not None:
                _, started = located[(story_index, draft.dated)]
                answer = answer.format(date=f"{_event_date(started, story.beats[draft.dated].when):%-d %B %Y}")
            evidence = tuple(dialog_id for beat in draft.beats for dialog_id in located[(story_index, beat)][0])
            questions.append(Question(text=draft.text, evidence=evidence, category=draft.category, answer=answer))
    tallied: dict[tuple[int, str], list[tuple[str, int, str]]] = {}
    for story_index, story in enumerate(stories):
        for question, part, beat in story.tallies:
            tallied.setdefault((story.owner, question), []).append((part, story_index, beat))
    for (owner, question), members in tallied.items():
        if len({story_index for _, story_index, _ in members}) >= 2:
            person = people[owner]
            questions.append(
                Question(
                    text=question.format(
                        X=person.name, P=person.object if person.object == "him" else person.possessive, p=person.possessive
                    ),
                    evidence=tuple(
                        dict.fromkeys(dialog_id for _, member, beat in members for dialog_id in located[(member, beat)][0])
                    ),
                    category="multi-hop",
                    answer="; ".join(dict.fromkeys(part for part, _, _ in members)),
                )
            )
    rng.shuffle(questions)
    return User(
        user_id=f"pair-{index + 1:02d}",
        speakers=(people[0].name, people[1].name),
        sessions=tuple(built),
        questions=tuple(questions),
    )


def dataset_generate(
    *, users: int = 6, seed: int = 1, sessions: tuple[int, int] = (19, 32), turns: tuple[int, int] = (15, 30)
) -> Dataset:
    """``users`` pairs of friends, each with ``sessions`` (low, high) conversations of ``turns`` (low, high) turns."""
    names = random.Random(f"{seed}:names")
    women, men = names.sample(WOMEN, len(WOMEN)), names.sample(MEN, len(MEN))
    pairs = []
    for index in range(users):
        # Alternate woman-woman, woman-man, man-man pairs; names repeat only past 15 pairs.
        first_woman, second_woman = [(True, True), (True, False), (False, False)][index % 3]
        first = _person(women[(2 * index) % len(women)] if first_woman else men[(2 * index) % len(men)], first_woman)
        second = _person(women[(2 * index + 1) % len(women)] if second_woman else men[(2 * index + 1) % len(men)], second_woman)
        pairs.append((first, second))
    return Dataset(
        name="synthetic",
        users=tuple(_user(index, pair, seed=seed, sessions=sessions, turns=turns) for index, pair in enumerate(pairs)),
    )
