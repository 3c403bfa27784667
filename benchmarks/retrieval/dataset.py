"""Long multi-session conversations between two people, with questions labelled by the turns that answer them.

Contract
--------
``dataset_generate(users=, seed=, sessions=, turns=)`` returns the same ``Dataset`` for the same
arguments on any machine (every draw comes from ``random.Random`` seeded with a string), and user
``i`` does not depend on how many users are asked for, so ``--users 2`` is a prefix of ``--users 6``.
Shaped like LoCoMo: each user is a pair of friends chatting over 20 to 30 sessions weeks apart, 15 to
30 turns each, with dialog ids ``D<session>:<turn>``.

What the questions test
-----------------------
Facts are said once, in passing, in the first person ("we picked up a little puppy... named him
Rex"), often inside a turn about something else, among small talk that reuses the same words (the
other friend has a dog too, neighbours' dogs bark) and "echoes" where the same person comes back to
the topic without the fact ("walking the dog in the rain again"). Questions speak in the third
person and fall in five categories, so that no single trick answers all of them:

* ``single-hop``: one turn holds the answer, the question shares its key words;
* ``temporal``: "when did ..."; the turn says "on Saturday", the answer is a date worked out from the
  session's date;
* ``multi-hop``: two or more turns, often sessions apart ("What did Caroline's dog swallow?" needs the
  turn that names the dog and the turn where Rex swallowed a sock; "In which cities has Rosa run
  races?" needs every race);
* ``paraphrase``: shares hardly a content word with its evidence, usually only an anchor such as a place name
  (``content_words`` makes that checkable), so keyword matching alone cannot find it;
* ``rare-entity``: names an invented restaurant, band, book, company or teacher said once, among
  turns about restaurants, bands, books, jobs or lessons, so that vectors alone blur it.

Who said a thing is in the turn's speaker only, never in its text: "What is the name of Caroline's
dog?" has to tell Caroline's turn from her friend's "we adopted a kitten called Luna".
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

CATEGORIES = ("single-hop", "temporal", "multi-hop", "paraphrase", "rare-entity")


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


# --- Checking paraphrases --------------------------------------------------------------------------

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

WOMEN = (
    "Caroline Melanie Joanna Priya Sofia Hannah Leila Nadia Grace Emma Chloe Olivia Mei Aisha Rosa Ingrid Clara Yuki "
    "Fatima Beatriz Zoe Tamsin Lucia Anika Harriet Maya Elena Noor Freya Camille"
).split()
MEN = (
    "Daniel Marcus Tomas Rahul Oliver Samuel Jonah Mateo Kenji Ibrahim Felix Andre Lukas Owen Ravi Nikolai Hugo "
    "Elliot Diego Patrick Arjun Callum Victor Simon Jamal Theo Bruno Kofi Emil Rory"
).split()
PEOPLE = (
    "Ava Ben Cora Dev Ezra Fiona Gabe Holly Isaac Jess Kai Lena Milo Nina Omar Pia Quinn Ruth Sami Tess Umar Vera "
    "Wes Xena Yara Zach Alma Bodhi Cleo Dario Edie Finn Greta Hal Iris Jude Kira Leon Mara Nico Opal Pavel Rhea "
    "Silas Tilly Uri Vik Wren Abel Bea"
).split()
PET_NAMES = (
    "Rex Luna Biscuit Pepper Mochi Juniper Waffles Ziggy Maple Clementine Bruno Nugget Pixel Hazel Otis Tofu Marlowe "
    "Kiwi Sprout Barnaby Poppy Gizmo Dottie Fig Archie Saffron Basil Pickles Cosmo Pretzel Noodle Bramble Ripley "
    "Mabel Olive Taco Murphy Dumpling Sunny"
).split()
CITIES = (
    "Lisbon Porto Seville Valencia Bologna Turin Lyon Bordeaux Ghent Utrecht Leipzig Hamburg Krakow Gdansk Prague "
    "Vienna Ljubljana Zagreb Tallinn Riga Helsinki Bergen Gothenburg Aarhus Edinburgh Glasgow Bristol Leeds Cork "
    "Galway Montreal Vancouver Portland Denver Austin Nashville Boston Chicago Oakland Melbourne Adelaide Wellington "
    "Osaka Busan Taipei Hanoi Chennai Nairobi Accra Santiago"
).split()
PLACES = (
    "Iceland",
    "the Amalfi coast",
    "Kyoto",
    "Patagonia",
    "the Scottish Highlands",
    "Crete",
    "northern Vietnam",
    "Morocco",
    "the Norwegian fjords",
    "Sicily",
    "Lapland",
    "Tasmania",
    "Cornwall",
    "the Azores",
    "the Dalmatian coast",
    "Sardinia",
    "the Dolomites",
    "Costa Rica",
    "Jordan",
    "Bali",
    "the Faroe Islands",
    "Andalusia",
    "Nova Scotia",
    "the Peak District",
    "Transylvania",
)
FOODS = (
    "olives",
    "blue cheese",
    "coriander",
    "mushrooms",
    "liquorice",
    "oysters",
    "beetroot",
    "aubergine",
    "anchovies",
    "raisins",
    "tofu",
    "marzipan",
    "celery",
    "sushi",
    "lamb curry",
    "mango sticky rice",
    "lasagne",
    "ramen",
    "pierogi",
    "shakshuka",
    "pad thai",
    "tiramisu",
    "fish tacos",
    "falafel",
)
DISHES = (
    "duck ragu",
    "miso aubergine",
    "lamb shoulder",
    "crab linguine",
    "smoked brisket",
    "mushroom risotto",
    "chilli paneer",
    "pork belly bao",
    "octopus salad",
    "pistachio cheesecake",
    "beef rendang",
    "burnt basque cheesecake",
    "cacio e pepe",
    "fried chicken sandwich",
    "sea bass ceviche",
    "cardamom buns",
    "goat cheese tart",
    "jerk chicken",
)
SHOWS = (
    "that new detective series",
    "the baking competition",
    "the documentary about octopuses",
    "the space drama everyone is talking about",
    "the cooking show with the grumpy chef",
    "that reality show set on an island",
    "the period drama with the big house",
    "the sitcom about the hospital",
)
SPORTS = ("tennis", "football", "netball", "squash", "badminton", "volleyball", "basketball", "five-a-side", "padel", "hockey")
INSTRUMENTS = (
    "piano",
    "cello",
    "violin",
    "guitar",
    "ukulele",
    "saxophone",
    "drums",
    "flute",
    "trumpet",
    "harp",
    "banjo",
    "accordion",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
COLOURS = (
    "teal",
    "mustard yellow",
    "forest green",
    "burgundy",
    "navy",
    "bright orange",
    "lilac",
    "charcoal",
    "cherry red",
    "sky blue",
)
MONTHS = ("March", "April", "May", "June", "July", "August", "September", "October")
SUBJECTS = (
    "Japanese",
    "astronomy",
    "bookkeeping",
    "ceramics",
    "art history",
    "Italian",
    "coding",
    "photography",
    "psychology",
    "woodwork",
    "sign language",
    "creative writing",
)
RARE_ONSETS = "b br c ch d dr f fl g gr h k kr l m n p pr qu r s sk st t th tr v w z".split()
RARE_VOWELS = "a e i o u ai ea ou y oa".split()
RARE_CODAS = ["", "", "n", "r", "l", "m", "s", "th", "ck", "ld", "rn", "x", "sk"]
RARE_ENDINGS = "wick mere holt ara ello ington ford vale by ix ova ane ston worth aby ulo enza".split()


# --- Drafting: a story is one or two beats (exchanges) and the questions they answer ----------------


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
    evidence: int | None  # the line that holds the fact (None: an echo, the topic again without it)
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
    # (a question over every story of this kind the owner told, this story's part of the answer):
    # "In which cities has Rosa run races?" is multi-hop once she told two.
    tally: tuple[str, str] | None = None
    # What the owner says about the same topic in other sessions without the fact ("walking the dog
    # in the rain again"): the distractors closest to the question, in meaning and in words.
    echoes: list[str] = field(default_factory=list)


# (phrase, days before the session, or the weekday it names: the last one before the session)
WHEN = (
    ("yesterday", 1, None),
    ("last night", 1, None),
    ("this morning", 0, None),
    ("the day before yesterday", 2, None),
    ("three days ago", 3, None),
    ("a week ago", 7, None),
    ("two weeks ago", 14, None),
    ("on Saturday", None, 5),
    ("on Sunday", None, 6),
    ("last Friday", None, 4),
    ("last Tuesday", None, 1),
    ("last weekend", None, 5),
    ("on Wednesday", None, 2),
)


@dataclass
class _Context:
    rng: random.Random
    owner: Person
    other: Person
    used: set[str] = field(default_factory=set)
    echoes: list[str] = field(default_factory=list)  # set by the story's builder

    def pick(self, pool: Sequence[Any]) -> Any:
        return self.rng.choice(pool)

    def fresh(self, pool: Sequence[str]) -> str:
        """A value of ``pool`` no story of this pair has used yet (so a name points at one thing)."""
        unused = [value for value in pool if value not in self.used]
        value = self.rng.choice(unused or list(pool))
        self.used.add(value)
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

    def some(self, pool: Sequence[str], low: int, high: int) -> list[str]:
        return self.rng.sample(list(pool), self.rng.randint(low, min(high, len(pool))))


def _a(noun: str) -> str:
    return f"{'an' if noun[0] in 'aeiou' else 'a'} {noun}"


def _fmt(template: str, **values: Any) -> str:
    text = template.format(**values)
    return text[0].upper() + text[1:]


def _beat(
    c: _Context, fact: str, *, lead: Sequence[str] = (), reactions: Sequence[str] = (), more: Sequence[str] = (), when=None
) -> _Beat:
    """An exchange around one fact: maybe a question from the friend, the fact, maybe a reaction and a reply."""
    lines: list[tuple[bool, str]] = []
    if lead and c.rng.random() < 0.5:
        lines.append((False, c.pick(lead)))
    evidence = len(lines)
    # Said in passing, among other things: real turns mix subjects, which blurs a turn's vector.
    before, after = c.rng.random(), c.rng.random()
    if before < 0.3:
        fact = f"{c.pick(PREAMBLES)} {fact}"
    elif before < 0.55:
        fact = f"{_aside(c)} {fact}"
    if after < 0.2:
        fact = f"{fact} {c.pick(AFTERTHOUGHTS)}"
    elif after < 0.5:
        fact = f"{fact} {_aside(c)}"
    lines.append((True, fact))
    if reactions and c.rng.random() < 0.85:
        lines.append((False, c.pick(reactions)))
        if more and c.rng.random() < 0.6:
            lines.append((True, c.pick(more)))
    return _Beat(lines=lines, evidence=evidence, when=when)


PREAMBLES = (
    "Ugh, long week.",
    "Haha okay so.",
    "Not much, honestly, work is work.",
    "Ah, so many things!",
    "Well, where do I start.",
    "Oh, and before I forget.",
    "Sorry, I've been terrible at replying.",
    "Okay, random update.",
)
AFTERTHOUGHTS = (
    "Anyway, how are you?",
    "Life, eh.",
    "What a month it's been.",
    "How was your weekend?",
    "Tell you more when I see you.",
    "I'm still processing it, honestly.",
)
ECHO_REACTIONS = (
    "Haha, sounds about right.",
    "Oh no!",
    "Ha, I bet.",
    "Keep me posted.",
    "That made me laugh.",
    "Classic.",
    "Hang in there.",
)


def _echo(c: _Context, line: str) -> _Beat:
    lines = [(True, line)]
    if c.rng.random() < 0.6:
        lines.append((False, c.pick(ECHO_REACTIONS)))
    return _Beat(lines=lines, evidence=None)


NEWS_LEADS = (
    "So what's new with you?",
    "Anything exciting happening on your end?",
    "How have things been lately?",
    "Tell me something good, I need it.",
    "What have you been up to?",
    "Okay, your turn. Any news?",
)
CHEERS = (
    "No way, that's huge!",
    "Wow, congratulations!",
    "Oh I love that for you.",
    "That's amazing. How do you feel about it?",
    "Good for you, honestly.",
    "Wait, really? Tell me everything.",
)
SYMPATHY = (
    "Oh no, that sounds awful.",
    "Ugh, I'm sorry. Are you okay?",
    "That's rough. Hope it gets better soon.",
    "Yikes. What a week you're having.",
)


# --- The stories ---------------------------------------------------------------------------------

SPECIES = (
    # (species, a young one, a paraphrase that avoids both, legs)
    ("dog", "puppy", "four-legged member of {X}'s family"),
    ("cat", "kitten", "four-legged member of {X}'s family"),
    ("rabbit", "bunny", "long-eared member of {X}'s family"),
    ("parrot", "baby parrot", "feathered member of {X}'s family"),
    ("guinea pig", "guinea pig", "furry member of {X}'s family"),
    ("tortoise", "baby tortoise", "shelled member of {X}'s family"),
)
PET_EVENTS = (
    # (the turn, a question on it, the answer, the event as a question says it)
    (
        "{pet} swallowed one of my socks {when}, so that was a fun night at the emergency vet.",
        "What did {X}'s {species} swallow?",
        "a sock",
        "swallow a sock",
    ),
    (
        "{pet} won second prize at the neighbourhood pet show {when}!",
        "What prize did {X}'s {species} win?",
        "second prize at a pet show",
        "win a prize at the pet show",
    ),
    ("{pet} got stung by a bee {when} and {pp} whole face puffed up.", "What stung {X}'s {species}?", "a bee", "get stung"),
    (
        "{pet} chewed through my laptop charger {when}. Third one this year.",
        "What did {X}'s {species} chew through?",
        "a laptop charger",
        "chew through a charger",
    ),
    (
        "{pet} had a small operation on {pp} leg {when}, {ps}'s wearing the cone of shame now.",
        "Which part of {X}'s {species} was operated on?",
        "a leg",
        "have an operation",
    ),
    (
        "{pet} worked out how to open the kitchen cupboard {when} and ate half a loaf of bread.",
        "What did {X}'s {species} eat after opening the cupboard?",
        "half a loaf of bread",
        "raid the kitchen cupboard",
    ),
    (
        "{pet} escaped through a gap in the fence {when}, a neighbour found {po} outside the bakery.",
        "Where was {X}'s {species} found after escaping?",
        "outside the bakery",
        "escape through the fence",
    ),
)


def _pet(c: _Context) -> _Story:
    species, young, family = c.pick(SPECIES)
    pet = c.fresh(PET_NAMES)
    woman = c.rng.random() < 0.5
    ps, po, pp = ("she", "her", "her") if woman else ("he", "him", "his")
    values = {"pet": pet, "species": species, "young": young, "ps": ps, "po": po, "pp": pp, "Ps": ps.capitalize()}
    adopt = c.pick(
        (
            "Guess what, I finally adopted a {young}! {Ps}'s called {pet} and {ps} has already claimed the sofa.",
            "We picked up a little {young} from the shelter at the weekend. Named {po} {pet}.",
            "So I have a new flatmate: a {species} called {pet}. Sleep is a distant memory.",
            "The rescue centre rang back and {pet} is officially ours, a {months}-month-old {species}.",
            "Oh, I never told you! The kids talked me into a {young}. {pet}. Yes, they chose the name.",
            "Brought home a {young} last week, {pet}, and the flat already smells different haha.",
        )
    )
    first = _beat(
        c,
        _fmt(adopt, months=c.pick((2, 3, 4, 5, 6, 7, 9)), **values),
        lead=NEWS_LEADS,
        reactions=(
            "Oh my gosh, send pictures immediately!",
            "That's adorable. How is everyone adjusting?",
            f"A {species}! Is the house still in one piece?",
            f"I'm so jealous, I've wanted a {species} for years.",
        ),
        more=("Mostly chewing and sleeping so far.", "We're still learning each other's routines.", "Pictures tonight, promise."),
    )
    event, question, answer, happened = c.pick(PET_EVENTS)
    phrase, when = c.when()
    second = _beat(
        c,
        _fmt(event, when=phrase, **values),
        lead=("How's the little one doing?", "How's life with the new pet?", "Any chaos at home this week?"),
        reactions=SYMPATHY + ("Haha, what a character.", "Pets are a full-time job, honestly."),
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        f"The {species} woke me up at five again, I'm running on coffee.",
        f"Vet bills are no joke. Never getting a second {species}. Probably.",
        f"Our {species} is terrified of the hoover, it's ridiculous.",
        f"Walking the {species} in the rain is character building, apparently.",
        "Someone at the park asked if they could adopt ours. Tempting, some days.",
    ]
    return _Story(
        beats=[first, second],
        questions=[
            _Draft(
                "single-hop",
                c.pick(("What is the name of {X}'s {s}?", "What did {X} name {p} {s}?", "What is {X}'s {s} called?")).format(
                    X=X, s=species, p=c.owner.possessive
                ),
                pet,
                (0,),
            ),
            _Draft("paraphrase", "Who is the newest " + family.format(X=X) + "?", f"{pet}, a {species}", (0,)),
            _Draft("multi-hop", question.format(X=X, species=species), answer, (0, 1)),
            _Draft("temporal", f"When did {X}'s {species} {happened}?", "{date}", (0, 1), dated=1),
        ],
    )


ROLES = (
    "data analyst",
    "project manager",
    "sous-chef",
    "primary school teacher",
    "accountant",
    "UX designer",
    "paralegal",
    "physiotherapist",
    "lab technician",
    "copywriter",
)
COMPANY_KINDS = (
    "Logistics",
    "Analytics",
    "Health",
    "Foods",
    "Media",
    "Robotics",
    "Insurance",
    "Architects",
    "Pharma",
    "Games",
    "Energy",
    "Consulting",
)


def _job(c: _Context) -> _Story:
    company = f"{c.rare()} {c.pick(COMPANY_KINDS)}"
    role = c.pick(ROLES)
    fact = c.pick(
        (
            "Big news, I accepted the offer from {company}! Starting as their {role} next month.",
            "Handed in my notice today. I'm joining {company} as {a_role} in two weeks, terrified and excited.",
            "So the interview at {company} went well and they want me as their {role}. I said yes!",
            "Signed the contract with {company} this morning. It's {a_role} job, better hours, shorter commute.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, company=company, role=role, a_role=_a(role)),
        lead=NEWS_LEADS,
        reactions=CHEERS + ("About time someone appreciated you!", "Are you nervous about the first day?"),
        more=("A bit. Mostly I'm relieved.", "Drinks on me when I get my first pay cheque.", "I'll miss my old team though."),
    )
    X = c.owner.name
    c.echoes = [
        "First week at the new job done, my brain is full.",
        "The new office has free coffee, so that's a win.",
        "Still getting used to the new role, so many meetings.",
        "My old boss messaged me asking how the new job is going. Awkward.",
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"Which company did {X} join as {_a(role)}?", company, (0,)),
            _Draft("rare-entity", f"What position did {X} take at {company}?", role, (0,)),
            _Draft("rare-entity", f"What is {company}?", f"the company {X} joined as {_a(role)}", (0,)),
            _Draft("paraphrase", c.pick((f"Who is {X}'s new employer?", f"Where is {X} working these days?")), company, (0,)),
        ],
    )


def _move(c: _Context) -> _Story:
    city = c.fresh(CITIES)
    fact = c.pick(
        (
            "We finally signed the lease on a flat in {city}! Moving on the {day}th.",
            "Packing boxes all weekend, the move to {city} is really happening.",
            "Found a little two-bedroom place in {city}, close to the river. Keys on Friday.",
            "I'm relocating to {city} for good, the commute was killing me.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, city=city, day=c.rng.randint(4, 28)),
        lead=NEWS_LEADS + ("How's the flat hunt going?",),
        reactions=(
            "A fresh start! Do you know anyone there?",
            "Wow, that's a big move.",
            "I'll help you pack if you feed me.",
            f"I've heard great things about {city}.",
        ),
        more=(
            "Only one old friend, but I'll manage.",
            "The boxes are winning at the moment.",
            "I'm excited and terrified in equal measure.",
        ),
    )
    X = c.owner.name
    c.echoes = [
        "Still unpacking boxes in the new flat.",
        "The new neighbourhood is growing on me.",
        "Still no internet at the new place, send help.",
        "Found a great bakery near the new flat, dangerous.",
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", c.pick((f"Which city is {X} moving to?", f"Where is {X} moving?")), city, (0,)),
            _Draft(
                "paraphrase",
                c.pick((f"Where will {X} be living from now on?", f"In what town does {X} plan to settle down?")),
                city,
                (0,),
            ),
        ],
    )


RACES = (
    ("half marathon", "1:{m:02d}"),
    ("10k", "{m}:{s:02d}"),
    ("marathon", "3:{m:02d}"),
    ("triathlon", "2:{m:02d}"),
    ("trail race", "1:{m:02d}"),
)


def _race(c: _Context) -> _Story:
    race, clock = c.pick(RACES)
    city = c.pick(CITIES)
    finish = clock.format(m=c.rng.randint(41, 59), s=c.rng.randint(0, 59))
    phrase, when = c.when()
    fact = c.pick(
        (
            "I ran the {city} {race} {when}! {finish}, and my legs have filed a complaint.",
            "Did the {city} {race} {when}. Finished in {finish}, not bad for someone who hates running.",
            "{when} I finished the {city} {race} in {finish}, a new personal best!",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, city=city, race=race, when=phrase, finish=finish),
        lead=("How was your weekend?", "Did you do anything fun recently?", "You sound tired, what happened?"),
        reactions=(
            "Whoa, respect. I get tired walking to the bus.",
            "That's so impressive!",
            "How are your knees?",
            "Are you going to do another one?",
        ),
        more=("My knees are not speaking to me.", "Never again. Until next year.", "Already looking at the next one, help."),
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        "Back out running, slowly this time.",
        "I'm thinking about signing up for another race, stop me.",
        "My running watch died mid-run, tragedy.",
        "Did a long run this morning, legs like jelly.",
    ]
    return _Story(
        tally=("In which cities has {X} run races?", city),
        beats=[beat],
        questions=[
            _Draft("temporal", f"When did {X} run the {city} {race}?", "{date}", (0,), dated=0),
            _Draft("single-hop", f"What was {X}'s finishing time in the {city} {race}?", finish, (0,)),
            _Draft("paraphrase", f"How long did it take {X} to complete that race in {city}?", finish, (0,)),
        ],
    )


def _trip(c: _Context) -> _Story:
    place = c.fresh(PLACES)
    days = c.rng.randint(4, 16)
    detail = c.pick(
        (
            "The food alone was worth the flight.",
            "It rained every single day and I loved it anyway.",
            "I took about a thousand photos.",
            "Already planning to go back.",
        )
    )
    phrase, when = c.when()
    fact, dated = c.pick(
        (
            ("Just got back from {days} days in {place}. {detail}", False),
            ("Back from {place}! {days} days was not nearly enough.", False),
            ("We flew home from {place} {when}, {days} days of pure bliss. {detail}", True),
        )
    )
    beat = _beat(
        c,
        _fmt(fact, days=days, place=place, detail=detail, when=phrase),
        lead=("You've been quiet lately!", "Where have you been hiding?", "How was the time off?"),
        reactions=(
            "Jealous! What was the highlight?",
            "Oh that sounds dreamy.",
            "I need a holiday so badly.",
            "Did you get any sun?",
        ),
        more=("Honestly, just not checking email.", "The hiking, hands down.", "The people were so friendly."),
        when=when if dated else None,
    )
    X = c.owner.name
    drafts = [
        _Draft("single-hop", f"How many days did {X} spend in {place}?", str(days), (0,)),
        _Draft("paraphrase", f"How long was {X}'s holiday in {place}?", f"{days} days", (0,)),
    ]
    if dated:
        drafts.append(_Draft("temporal", f"When did {X} fly home from {place}?", "{date}", (0,), dated=0))
    c.echoes = [
        "Still dreaming about that holiday.",
        "Printed some of the holiday photos for the fridge.",
        "Post-holiday blues are real, I want to go back.",
    ]
    return _Story([beat], drafts, tally=("Which places has {X} been on holiday to?", place))


def _lessons(c: _Context) -> _Story:
    instrument = c.fresh(INSTRUMENTS)
    teacher = f"{c.pick(('Mr', 'Ms', 'Mrs'))} {c.rare()}"
    weekday = c.pick(WEEKDAYS[:5])
    fact, says_day = c.pick(
        (
            ("I signed up for {instrument} lessons! Every {weekday} evening with a teacher called {teacher}.", True),
            (
                "Started on the {instrument} at last. {teacher} says I have potential, which I think is polite for terrible.",
                False,
            ),
            ("My {weekday} nights are {instrument} nights now, {teacher} is strict but lovely.", True),
        )
    )
    beat = _beat(
        c,
        _fmt(fact, instrument=instrument, teacher=teacher, weekday=weekday),
        lead=("Picked up any new hobbies?", "What's keeping you busy these days?"),
        reactions=(
            "That's so cool, I always wanted to learn music.",
            "Play me something next time!",
            "Your neighbours must love you haha.",
        ),
        more=("Give me a year before you ask for a concert.", "The neighbours have been very patient."),
    )
    X = c.owner.name
    drafts = [
        _Draft("single-hop", f"What instrument is {X} learning?", instrument, (0,)),
        _Draft("rare-entity", f"What does {teacher} teach {X}?", instrument, (0,)),
        _Draft("paraphrase", f"What is {X} practising to play these days?", instrument, (0,)),
        _Draft("rare-entity", f"Who is {teacher}?", f"{X}'s {instrument} teacher", (0,)),
    ]
    if says_day:
        drafts.append(_Draft("single-hop", f"On which evening does {X} have {instrument} lessons?", weekday, (0,)))
    c.echoes = [
        "Practised for an hour last night, the neighbours were thrilled.",
        "My fingers hurt from practising.",
        "I have a little recital coming up, terrified.",
        "Finally played a whole song without stopping!",
    ]
    return _Story([beat], drafts)


def _engaged(c: _Context) -> _Story:
    relation = c.pick(("sister", "brother", "cousin", "oldest friend"))
    relative = c.fresh(PEOPLE)
    partner = c.fresh(PEOPLE)
    city = c.pick(CITIES)
    first = _beat(
        c,
        _fmt(
            c.pick(
                (
                    "My {relation} {relative} just moved to {city} for work, so I'll be visiting a lot.",
                    "{relative}, my {relation}, is starting a new job in {city} in the autumn.",
                    "Spent the weekend helping my {relation} {relative} settle into {city}.",
                )
            ),
            relation=relation,
            relative=relative,
            city=city,
        ),
        reactions=("Oh nice, free place to stay!", "How are they finding it?", "That's a big change for them."),
        more=("Loving it so far, apparently.", "Still unpacking, but happy."),
    )
    phrase, when = c.when()
    second = _beat(
        c,
        _fmt(
            c.pick(
                (
                    "{relative} got engaged to {partner} {when}! I cried on the phone.",
                    "Huge news: {relative} and {partner} are engaged! {partner} proposed {when}.",
                )
            ),
            relative=relative,
            partner=partner,
            when=phrase,
        ),
        lead=NEWS_LEADS,
        reactions=CHEERS + ("A wedding! Do they have a date yet?",),
        more=("Next summer, probably.", "No idea yet, they're still floating."),
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        f"My {relation} keeps sending me wedding venue links.",
        "Wedding planning in our family is chaos.",
        f"Talked to my {relation} for two hours last night, catching up on everything.",
    ]
    return _Story(
        [first, second],
        [
            _Draft("multi-hop", f"Who is {X}'s {relation} engaged to?", partner, (0, 1)),
            _Draft("single-hop", f"Which city did {X}'s {relation} move to?", city, (0,)),
            _Draft("temporal", f"When did {relative} get engaged?", "{date}", (1,), dated=1),
        ],
    )


def _taste(c: _Context) -> _Story:
    food = c.fresh(FOODS)
    hates = c.rng.random() < 0.5
    if hates:
        fact = c.pick(
            (
                "Honestly I can't stand {food}, it's a texture thing.",
                "Don't judge me but {food} is the worst thing humans have ever invented.",
                "Someone put {food} in my lunch today and I nearly gagged.",
            )
        )
        questions = [
            _Draft("single-hop", f"What food does {c.owner.name} hate?", food, (0,)),
            _Draft("paraphrase", f"Which dish would {c.owner.name} send back if a waiter served it?", food, (0,)),
        ]
    else:
        fact = c.pick(
            (
                "{food} is the one thing I could eat every day for the rest of my life.",
                "I made {food} again, third time this week. Obsessed.",
                "Nothing beats {food}, I'd choose it for my last meal.",
            )
        )
        questions = [
            _Draft("single-hop", f"What food does {c.owner.name} love most?", food, (0,)),
            _Draft("paraphrase", f"If {c.owner.name} could keep a single dish forever, which one would it be?", food, (0,)),
        ]
    beat = _beat(
        c,
        _fmt(fact, food=food),
        lead=("What did you have for dinner?", "Food opinions, go.", "Are you cooking tonight?"),
        reactions=(
            "Haha fair enough.",
            "Wow, strong opinion!",
            "I'm the complete opposite.",
            "Okay noted for when you come over.",
        ),
    )
    c.echoes = [
        "Went to a tapas place and ordered all the wrong things.",
        "Trying to cook more at home, it's going okay.",
        "I had the weirdest craving today.",
    ]
    return _Story([beat], questions)


def _plans(c: _Context) -> _Story:
    first_choice = c.fresh(PLACES)
    second_choice = c.fresh(PLACES)
    month = c.pick(MONTHS)
    first = _beat(
        c,
        _fmt(
            c.pick(
                (
                    "We're planning a week in {place} in {month}, I can't wait.",
                    "Thinking of {place} for our {month} holiday, any tips?",
                    "{month} is sorted: we want to do {place} this year.",
                )
            ),
            place=first_choice,
            month=month,
        ),
        reactions=("Oh that'll be lovely.", "Bring me back something!", "Good choice, you deserve it."),
    )
    reason = c.pick(
        (
            "the flights were half the price",
            "my partner got a work thing",
            "the hotel cancelled on us",
            "it's meant to be a heatwave there",
        )
    )
    second = _beat(
        c,
        _fmt(
            c.pick(
                (
                    "Change of plans for {month}: we booked {place} instead, {reason}.",
                    "Scrapped the original {month} plan, it's {place} now because {reason}.",
                )
            ),
            place=second_choice,
            month=month,
            reason=reason,
        ),
        lead=("How's the holiday planning going?", "Still on for your trip?"),
        reactions=("Ooh, even better maybe?", "Plot twist!", "Honestly that sounds great too."),
    )
    X = c.owner.name
    c.echoes = [
        "Holiday countdown has begun!",
        "Need to buy a new suitcase for the trip.",
        "Spent the evening reading hotel reviews, my eyes hurt.",
    ]
    return _Story(
        [first, second],
        [
            _Draft(
                "multi-hop",
                f"Where did {X} first plan to go in {month}, and where did {c.owner.subject} book in the end?",
                f"{first_choice}, then {second_choice}",
                (0, 1),
            ),
            _Draft("single-hop", f"Why did {X} change {c.owner.possessive} {month} holiday plans?", reason, (1,)),
        ],
    )


def _fundraiser(c: _Context) -> _Story:
    event = c.pick(
        (
            "bake sale at the kids' school",
            "charity quiz night",
            "sponsored swim",
            "car boot sale for the shelter",
            "garden open day",
        )
    )
    money = c.rng.choice(range(240, 3000, 5))
    fact = c.pick(
        (
            "The {event} raised ${money}, way more than last year!",
            "Final count from the {event}: ${money}. I'm so proud of everyone.",
        )
    )
    beat = _beat(c, _fmt(fact, event=event, money=money), reactions=CHEERS + ("People are so generous when you ask.",))
    X = c.owner.name
    c.echoes = [
        "Counting coins for the fundraiser all evening.",
        "Baked forty cupcakes for the fundraiser, never again.",
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"How much did {X}'s {event} raise?", f"${money}", (0,)),
            _Draft("paraphrase", f"What total did {X}'s fundraising effort bring in?", f"${money}", (0,)),
        ],
    )


ITEMS = (
    ("bike", "bicycle"),
    ("sofa", "couch"),
    ("kayak", "boat"),
    ("raincoat", "waterproof jacket"),
    ("armchair", "seat"),
    ("scooter", "moped"),
    ("kettle", "appliance"),
)


def _purchase(c: _Context) -> _Story:
    item, synonym = c.pick(ITEMS)
    colour = c.pick(COLOURS)
    fact = c.pick(
        (
            "Treated myself to a {colour} {item}, it's gorgeous.",
            "Finally replaced the old {item}. The new one is {colour}, don't laugh.",
            "Got a second-hand {item} this weekend, bright {colour}.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, colour=colour, item=item),
        reactions=("Ooh, fancy!", "Pictures or it didn't happen.", "Bold choice, I like it."),
        more=("It was a bargain, too.", "Zero regrets."),
    )
    X = c.owner.name
    c.echoes = [
        f"The new {item} is already covered in mud.",
        f"Everyone keeps commenting on my {item}.",
    ]
    return _Story(
        tally=("What has {X} bought for {P}self lately?", f"a {colour} {item}"),
        beats=[beat],
        questions=[
            _Draft("single-hop", f"What colour is {X}'s new {item}?", colour, (0,)),
            _Draft("paraphrase", f"What shade is the {synonym} {X} bought?", colour, (0,)),
        ],
    )


ALLERGENS = (
    "peanuts",
    "shellfish",
    "penicillin",
    "birch pollen",
    "kiwi fruit",
    "sesame",
    "latex",
    "wasp stings",
    "strawberries",
    "eggs",
)


def _allergy(c: _Context) -> _Story:
    allergen = c.fresh(ALLERGENS)
    fact = c.pick(
        (
            "Turns out I'm allergic to {allergen}. Did the tests at the clinic on {weekday}.",
            "So that rash was {allergen}. Who knew I was allergic.",
            "The clinic confirmed it: {allergen} allergy. Reading every label now.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, allergen=allergen, weekday=c.pick(WEEKDAYS)),
        lead=("How are you feeling?", "Did you sort out that health thing?"),
        reactions=SYMPATHY + ("Good to know at least!",),
    )
    X = c.owner.name
    c.echoes = [
        "Reading food labels takes forever now.",
        "Carrying my medication everywhere now, just in case.",
        "Had to quiz the waiter about every ingredient last night.",
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"What is {X} allergic to?", allergen, (0,)),
            _Draft("paraphrase", f"What gives {X} a bad reaction, according to the doctor?", allergen, (0,)),
        ],
    )


VENUES = ("an old church", "a tiny basement bar", "the arena", "a festival in a field", "the town hall")


def _concert(c: _Context) -> _Story:
    band = c.pick(("The {r} Sisters", "{r} and the Tides", "The {r} Collective", "{r} Youth", "The Velvet {r}", "{r} Parade"))
    band = band.format(r=c.rare())
    venue = c.pick(VENUES)
    phrase, when = c.when()
    fact = c.pick(
        (
            "Saw {band} live {when}, at {venue}. They played for almost three hours.",
            "{when} I finally saw {band} at {venue}. My ears are still ringing.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, band=band, venue=venue, when=phrase),
        lead=("Been to any gigs lately?", "What did you get up to this week?"),
        reactions=(
            "I'm so jealous, were they good live?",
            "Never heard of them, send me a song.",
            "Live music is the best medicine.",
        ),
        more=("Best gig of my life, maybe.", "The crowd was half the fun."),
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        "Still humming that song from the gig.",
        "Bought tickets for another gig next month.",
        "My ears have finally stopped ringing.",
    ]
    return _Story(
        tally=("Which bands has {X} seen live?", band),
        beats=[beat],
        questions=[
            _Draft("temporal", f"When did {X} see {band} live?", "{date}", (0,), dated=0),
            _Draft("rare-entity", f"Where did {X} see {band} play?", venue, (0,)),
        ],
    )


def _restaurant(c: _Context) -> _Story:
    restaurant = f"{c.rare()} {c.pick(('Kitchen', 'Tavern', 'Bistro', 'Noodle Bar', 'Trattoria', 'Diner', 'Grill', 'Canteen'))}"
    dish = c.pick(DISHES)
    phrase, when = c.when()
    fact, dated = c.pick(
        (
            ("Had dinner at {restaurant} {when}, the {dish} was unreal.", True),
            ("If you're ever near {restaurant}, get the {dish}. Trust me.", False),
            ("{restaurant} was a letdown, except the {dish}, which was perfect.", False),
        )
    )
    beat = _beat(
        c,
        _fmt(fact, restaurant=restaurant, dish=dish, when=phrase),
        lead=("Eaten anywhere good lately?", "I need a restaurant recommendation."),
        reactions=("Adding it to my list!", "Now I'm hungry, thanks.", "Was it expensive?"),
        more=("Not too bad, actually.", "Book ahead, it gets busy."),
        when=when if dated else None,
    )
    X = c.owner.name
    drafts = [_Draft("rare-entity", f"Which dish did {X} recommend at {restaurant}?", dish, (0,))]
    if dated:
        drafts.append(_Draft("temporal", f"When did {X} have dinner at {restaurant}?", "{date}", (0,), dated=0))
    c.echoes = [
        "Ate way too much at dinner last night.",
        "We tried a new place in town, it was just okay.",
        "I keep thinking about that meal.",
    ]
    return _Story([beat], drafts, tally=("Which restaurants has {X} talked about?", restaurant))


def _book(c: _Context) -> _Story:
    title = f"The {c.rare()} {c.pick(('Letters', 'Archive', 'Garden', 'Winter', 'Lighthouse', 'Orchard', 'Affair', 'Crossing'))}"
    author = f"{c.pick(PEOPLE)} {c.rare()}"
    fact, opinion = c.pick(
        (
            ("I'm halfway through {title} by {author} and can't put it down.", "gripping"),
            ("Just finished {title}. {author} really knows how to end a book.", "a great ending"),
            (
                "Book club picked {title} by {author} this month. Not my thing at all.",
                "not for her" if c.owner.subject == "she" else "not for him",
            ),
        )
    )
    beat = _beat(
        c,
        _fmt(fact, title=title, author=author),
        lead=("Reading anything good?", "I need something new to read."),
        reactions=("Ooh, is it a thriller?", "Lend it to me when you're done?", "I haven't read a book in months, shame on me."),
    )
    X = c.owner.name
    c.echoes = [
        "Book club was chaos, nobody had finished it.",
        "Stayed up way too late reading again.",
        "Looking for my next book, any ideas?",
    ]
    return _Story(
        tally=("Which books has {X} mentioned?", title),
        beats=[beat],
        questions=[
            _Draft("rare-entity", f"Who wrote {title}?", author, (0,)),
            _Draft("rare-entity", f"Which novel by {author} did {X} mention?", title, (0,)),
            _Draft("rare-entity", f"What did {X} think of {title}?", opinion, (0,)),
        ],
    )


VOLUNTEERING = (
    ("food bank", "a place that hands out groceries"),
    ("library", "a room full of books"),
    ("hospice", "a care home for the dying"),
    ("community garden", "shared vegetable plots"),
    ("animal shelter", "a rescue centre"),
    ("charity shop", "a second-hand store"),
)


def _volunteer(c: _Context) -> _Story:
    place, _ = c.pick(VOLUNTEERING)
    weekday = c.pick(WEEKDAYS)
    fact = c.pick(
        (
            "I've started volunteering at the {place} on {weekday} mornings.",
            "Spent my {weekday} at the {place} again, I really love it there.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, place=place, weekday=weekday),
        lead=NEWS_LEADS,
        reactions=("That's lovely of you.", "How did you get into that?", "I should do something like that."),
    )
    X = c.owner.name
    c.echoes = [
        "Volunteering this week was exhausting but so worth it.",
        "Met the loveliest people while volunteering.",
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"On which day does {X} volunteer at the {place}?", weekday, (0,)),
            _Draft("paraphrase", f"Where does {X} give {c.owner.possessive} time for free?", place, (0,)),
        ],
    )


def _birthday(c: _Context) -> _Story:
    child = c.fresh(PEOPLE)
    kid = c.pick(("son", "daughter"))
    age = c.rng.randint(3, 12)
    theme = c.pick(("dinosaur", "pirate", "space", "unicorn", "football", "jungle", "superhero", "mermaid"))
    fact, says_kid = c.pick(
        (
            ("My {kid} {child} turns {age} next week, we're doing a {theme} party.", True),
            ("{child} is going to be {age}, can you believe it? {Theme} cake ordered.", False),
        )
    )
    beat = _beat(
        c,
        _fmt(fact, kid=kid, child=child, age=age, theme=theme, Theme=theme.capitalize()),
        reactions=("Where does the time go!", "Oh that's adorable.", "Good luck with a room full of kids!"),
    )
    X = c.owner.name
    drafts = [
        _Draft("single-hop", f"How old is {X}'s {kid} turning?" if says_kid else f"How old is {child} turning?", str(age), (0,)),
        _Draft("single-hop", f"What theme did {X} pick for {child}'s birthday?", theme, (0,)),
    ]
    c.echoes = [
        "Party planning is taking over my life.",
        "Twelve kids, one bouncy castle, zero regrets.",
    ]
    return _Story([beat], drafts)


def _course(c: _Context) -> _Story:
    subject = c.fresh(SUBJECTS)
    college = f"{c.rare()} College"
    fact = c.pick(
        (
            "I enrolled in an evening course in {subject} at {college}.",
            "Signed up for {subject} classes at {college}, Thursdays after work.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, subject=subject, college=college),
        lead=("Any new projects?", "What's keeping you busy these days?"),
        reactions=("Look at you, lifelong learner!", "Is it hard?", "Teach me when you're done."),
    )
    X = c.owner.name
    c.echoes = [
        "Homework for my evening class, at my age!",
        "Had my first exam in years, nerve-wracking.",
        "My classmates are all half my age, it's fun.",
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"What subject is {X} taking classes in?", subject, (0,)),
            _Draft("rare-entity", f"What does {X} study at {college}?", subject, (0,)),
            _Draft("paraphrase", f"What is {X} learning about at night school?", subject, (0,)),
        ],
    )


ROADS = ("M4", "ring road", "coast road", "A9", "motorway", "bypass")


def _breakdown(c: _Context) -> _Story:
    road = c.pick(ROADS)
    cause = c.pick(("clutch", "battery", "gearbox", "alternator", "radiator"))
    phrase, when = c.when()
    fact = c.pick(
        (
            "My car broke down on the {road} {when}, waited two hours for the tow truck. The {cause}, apparently.",
            "{when} the car died on the {road}. {cause}, so that's an expensive month.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, road=road, cause=cause.capitalize() if fact.startswith("{when}") else cause, when=phrase),
        lead=("You sound stressed, what's up?",),
        reactions=SYMPATHY,
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        "The garage still hasn't fixed the car.",
        "Taking the bus everywhere while the car's in the garage.",
        "Got the car back, and the bill. Ouch.",
    ]
    return _Story(
        [beat],
        [
            _Draft("temporal", f"When did {X}'s car break down?", "{date}", (0,), dated=0),
            _Draft("paraphrase", f"Which part failed in {X}'s vehicle?", cause, (0,)),
        ],
    )


def _gift(c: _Context) -> _Story:
    partner = c.fresh(PEOPLE)
    gift = c.pick(
        (
            "a vintage record player",
            "a pottery class for two",
            "a hand-knitted scarf",
            "a weekend in a cabin",
            "a telescope",
            "an espresso machine",
            "a framed map of where we met",
        )
    )
    fact = c.pick(
        (
            "Got {partner} {gift} for our anniversary, it went down very well.",
            "Anniversary dinner was lovely, I gave {partner} {gift}.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, partner=partner, gift=gift),
        reactions=("That's so thoughtful!", "Okay you've set the bar very high.", "How many years now?"),
        more=("Seven! Time flies.", "Three, and still going strong."),
    )
    X = c.owner.name
    c.echoes = [
        "Anniversary plans are stressing me out.",
        "We had the loveliest quiet evening at home.",
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"What did {X} give {partner} for their anniversary?", gift, (0,)),
            _Draft("paraphrase", f"Who is {X}'s other half?", partner, (0,)),
        ],
    )


def _injury(c: _Context) -> _Story:
    part = c.pick(("ankle", "wrist", "knee", "shoulder", "back"))
    sport = c.fresh(SPORTS)
    phrase, when = c.when()
    fact = c.pick(
        (
            "Sprained my {part} playing {sport} {when}, so I'm hobbling around.",
            "I hurt my {part} at {sport} {when}, the physio says rest for a month.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, part=part, sport=sport, when=phrase),
        lead=("You okay? You sounded rough earlier.", "How was your week?"),
        reactions=SYMPATHY,
        more=("I'll live. Bored already.", "Ice, pillows and bad TV."),
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        "Physio again today, ouch.",
        "Can't wait to be back playing.",
        "Doing my exercises every morning like a good patient.",
    ]
    return _Story(
        [beat],
        [
            _Draft("temporal", f"When did {X} hurt {c.owner.possessive} {part}?", "{date}", (0,), dated=0),
            _Draft("paraphrase", f"Which game left {X} injured?", sport, (0,)),
        ],
    )


def _habit(c: _Context) -> _Story:
    habit = c.pick(("smoking", "coffee", "sugar", "social media", "alcohol", "energy drinks"))
    fact = c.pick(
        (
            "Three weeks without {habit} now and honestly I feel great.",
            "I gave up {habit} at the start of the month. Awful week, then fine.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, habit=habit),
        lead=("You seem different lately, in a good way.", "Any new year's resolutions that stuck?"),
        reactions=CHEERS + ("I could never.",),
    )
    c.echoes = [
        "Cravings were bad today, but I held on.",
        "Sleeping so much better lately.",
    ]
    return _Story(
        [beat], [_Draft("paraphrase", f"What has {c.owner.name} cut out of {c.owner.possessive} life recently?", habit, (0,))]
    )


def _garden(c: _Context) -> _Story:
    plant = c.pick(("rose bushes", "tomato plants", "apple trees", "lavender plants", "sunflowers", "raspberry canes"))
    count = c.rng.randint(3, 24)
    fact = c.pick(
        (
            "Planted {count} {plant} along the back fence this weekend.",
            "The garden project continues: {count} {plant} in the ground today.",
        )
    )
    beat = _beat(
        c,
        _fmt(fact, count=count, plant=plant),
        lead=("How's the garden?", "Did you get outside at all this weekend?"),
        reactions=("Green fingers!", "Your back must be killing you.", "It'll look amazing in summer."),
    )
    X = c.owner.name
    c.echoes = [
        "Spent all Sunday weeding.",
        "Slugs have declared war on my garden.",
    ]
    return _Story([beat], [_Draft("single-hop", f"How many {plant} did {X} plant?", str(count), (0,))])


PROJECTS = (
    "warehouse app",
    "spring campaign",
    "office move",
    "payroll system",
    "website relaunch",
    "client onboarding",
    "budget review",
)


def _manager(c: _Context) -> _Story:
    manager = c.fresh(PEOPLE)
    project = c.pick(PROJECTS)
    first = _beat(
        c,
        _fmt(
            c.pick(
                (
                    "My new manager started this week, {manager}. Seems sharp, used to run a team of forty.",
                    "We've got a new boss at work, {manager}, and so far so good.",
                    "{manager} is our new head of department. First meeting was surprisingly fun.",
                )
            ),
            manager=manager,
        ),
        lead=("How's work?", "Anything new at the office?"),
        reactions=(
            "New bosses are always a gamble.",
            "Fingers crossed they stay nice!",
            "That's a relief, the last one was awful.",
        ),
    )
    phrase, when = c.when()
    second = _beat(
        c,
        _fmt(
            c.pick(
                (
                    "{manager} put me in charge of the {project} {when}! Bit scary.",
                    "{when} {manager} asked me to lead the {project}. Big vote of confidence.",
                )
            ),
            manager=manager,
            project=project,
            when=phrase,
        ),
        lead=("How's work going?", "Still enjoying the job?"),
        reactions=CHEERS + ("You'll smash it.",),
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        "The new boss wants weekly reports now.",
        "Big meeting with my manager tomorrow, nervous.",
        "Work is busier than ever this month.",
    ]
    return _Story(
        [first, second],
        [
            _Draft("single-hop", f"Who is {X}'s new manager?", manager, (0,)),
            _Draft("multi-hop", f"What did {X}'s manager put {c.owner.object} in charge of?", project, (0, 1)),
            _Draft("temporal", f"When was {X} given the {project} to lead?", "{date}", (1,), dated=1),
        ],
    )


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
    (_restaurant, 3),
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


# --- Small talk: the same words, no facts ----------------------------------------------------------

SMALL_TALK: tuple[tuple[str, ...], ...] = (
    ("Did you watch {show} last night?", "Not yet, no spoilers please!"),
    ("I'm hooked on {show}, it's so bad it's good.", "Haha I know exactly the one you mean."),
    ("The weather has been so grim this week.", "Tell me about it, I haven't seen the sun since {weekday}."),
    ("It's finally warm enough to sit outside!", "Enjoy it, it'll be raining again by {weekday}."),
    (
        "My neighbour's {species} was barking at five in the morning again.",
        "Ugh, that would drive me mad.",
        "Earplugs are on the shopping list.",
    ),
    ("I saw someone walking six dogs at once in the park today.", "Haha, a professional! Or a very brave person."),
    ("Do you think a {species} is a lot of work?", "Depends on the {species}, honestly. And on you."),
    ("I keep meaning to start running again.", "You should! Even a slow 5k counts."),
    ("My cousin did the {city} {race} once, sounded brutal.", "No thank you. I'll cheer from a cafe."),
    ("Work has been relentless lately.", "Same here, my inbox is a disaster.", "We need a proper holiday, both of us."),
    ("Have you ever been to {city}?", "Once, years ago, for a wedding. Lovely old town."),
    ("{city} is supposed to be beautiful in spring.", "I've heard that too, it's on my list."),
    ("I made {food} for dinner and it was a disaster.", "Haha, what went wrong?", "Too much salt. Way too much."),
    ("Have you ever tried {food}?", "Once. I have mixed feelings."),
    ("There's a new place on the high street doing {dish}.", "Ooh, we should go sometime."),
    ("I'm so tired, I slept terribly.", "Same, it's been one of those weeks."),
    ("What are you doing this weekend?", "Nothing, and I'm very excited about it."),
    ("My phone screen cracked again.", "Again?! You need a better case."),
    ("Do you still play {sport}?", "Not really, my knees retired before I did."),
    ("I watched a {sport} match on TV and got way too invested.", "Haha that's the best way to watch."),
    ("Someone in my building is learning the {instrument}.", "Oh no. Or oh yes, depending on how good they are."),
    ("I found my old {instrument} in the attic.", "You should dust it off!"),
    ("Traffic on the {road} was a nightmare today.", "It always is on a {weekday}."),
    ("The train was cancelled, again.", "Classic. How late were you?", "Forty minutes. My boss didn't even notice."),
    ("Coffee or tea this morning?", "Coffee. Three of them."),
    ("Any good books lately?", "I keep starting them and not finishing, honestly."),
    ("My book club is reading something very long this month.", "Brave. I'd skim the last chapter."),
    ("I've been trying to eat healthier.", "How's that going?", "I had cake for breakfast, so, mixed."),
    ("My plants keep dying.", "Overwatering, probably. Everyone overwaters."),
    ("My mum called asking about holidays again.", "Haha, are you going home this year?"),
    ("I need a new pair of running shoes.", "Get the comfy ones, not the pretty ones."),
    ("I'm thinking about learning a language.", "Which one?", "No idea. Something with nice food."),
    ("Did you see the news about the new {sport} stadium?", "Yes, it's going to be chaos for parking."),
    ("The gym was packed today.", "January people, or just a busy {weekday}?"),
    ("I spent the whole evening cleaning.", "Satisfying though, right?"),
    ("We should get a group dinner going soon.", "Yes! I'll make a chat."),
    ("My flatmate left the oven on all day.", "Oh no, is everything okay?", "Yes, just a very warm kitchen."),
    ("Random question: cats or dogs?", "Both. Neither. Depends on the day."),
    ("I took a wrong turn and ended up at the {city} airport road.", "Haha how? Actually don't tell me."),
    ("Holidays feel so far away.", "Only a few more months, hang in there."),
    ("I have way too many tabs open.", "Close them. Liberate yourself."),
    ("I'm baking bread this weekend.", "Save me a slice!"),
    ("My sister keeps sending me {species} videos.", "Honestly the best kind of video."),
    ("Did it snow where you are?", "Just a bit, it melted by lunch."),
    ("I ordered {dish} on a whim, it was great.", "See, whims are good."),
    ("My laptop keeps freezing.", "Turn it off and on again, as the experts say."),
    ("A colleague brought in {food} for everyone.", "Lucky office. Ours brings in stale biscuits."),
    ("I almost bought a {colour} coat today.", "Almost? Go back!"),
    ("Do you ever think about moving to another city?", "All the time. Then I remember packing."),
    ("The kids next door started a band.", "Oh dear. What instruments?", "Mostly drums. Mostly loud."),
    ("I went for a long walk by the river.", "That sounds lovely and peaceful."),
    ("My knee has been clicking lately.", "Welcome to our thirties."),
    ("What's the best concert you've ever been to?", "Too hard to choose. Ask me later."),
    ("I tried a new recipe with {food}.", "Brave! Was it good?", "Surprisingly, yes."),
    ("Is it weird that I like rainy {weekday}s?", "Not at all, cosy days are the best."),
    ("I keep forgetting to reply to messages.", "Haha, I'm the same. Sorry in advance."),
    ("Saw a poster for a {race} in {city}.", "Tempted?", "Not even slightly."),
    ("Our office is moving floors next week.", "Exciting! Or not at all."),
    ("I need to book a dentist appointment.", "Same. We'll both keep putting it off."),
    ("My playlist is stuck on the same ten songs.", "Let me send you some new ones."),
)
GREETINGS = (
    ("Hey {you}! How's your week been?", "Hi! Busy but good. Yours?"),
    ("{you}! Long time no talk.", "I know, life has been a lot. How are you?"),
    ("Morning! Got a minute to catch up?", "Always, coffee's in hand."),
    ("Hiya, how was the weekend?", "Too short, as usual!"),
    ("Hey hey, what's new?", "Oh, where do I start..."),
    ("Hi {you}, are you around?", "Yes! Just got home. What's up?"),
)
FAREWELLS = (
    ("Okay, I have to run, talk soon!", "Bye! Say hi to everyone for me."),
    ("Right, dinner's burning. Later!", "Haha go, go. Talk soon."),
    ("Let's catch up again next week?", "Definitely. Take care!"),
    ("I should sleep. Night!", "Night night!"),
)


# Remarks on other subjects that a turn may carry beside its fact (small talk openers that are no question).
ASIDES = tuple(lines[0] for lines in SMALL_TALK if not lines[0].endswith("?") and "{you}" not in lines[0])


def _aside(c: _Context) -> str:
    return c.pick(ASIDES).format_map(_Slots(c.rng, c.other.name))


class _Slots(dict):
    """Fills a small-talk template's gaps with fresh draws each time."""

    def __init__(self, rng: random.Random, you: str) -> None:
        super().__init__(you=you)
        self.pools: Mapping[str, Sequence[str]] = {
            "show": SHOWS,
            "weekday": WEEKDAYS,
            "species": [species for species, _, _ in SPECIES],
            "city": CITIES,
            "race": [race for race, _ in RACES],
            "food": FOODS,
            "dish": DISHES,
            "sport": SPORTS,
            "instrument": INSTRUMENTS,
            "road": ROADS,
            "colour": COLOURS,
        }
        self.rng = rng

    def __missing__(self, name: str) -> str:
        return self.rng.choice(self.pools[name])


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
        if len(story.beats) == 1:
            chosen = [lightest(range(session_count))]
        else:
            gap = min(3, max(1, session_count // 4), session_count - 1)  # sessions between the two beats
            first = lightest(range(session_count - gap))
            chosen = [first, lightest(range(first + gap, session_count))]
        for beat_index, session in enumerate(chosen):
            plan[session].append((story_index, beat_index))
            load[session] += 1
    return plan


HANDOVERS = ("What about you, anything new?", "And you? What's going on with you?", "How about you?", "Enough about me. You?")
ACKNOWLEDGEMENTS = ("Haha, true.", "Ha, fair enough.", "Mm, I know.", "Right?")

_Unit = tuple[Sequence[tuple[int, str]] | tuple[str, ...], int | None]  # a beat's lines and its position, or small talk


def _session_lines(
    rng: random.Random, people: tuple[Person, Person], beats: list[tuple[int, _Beat]], length: int, longest: int
) -> tuple[list[tuple[int, str]], dict[int, int]]:
    """The turns of one session as (speaker index, text), about ``length`` and at most ``longest`` of
    them, and where each beat's evidence landed (position of the beat in ``beats`` -> turn index)."""
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
        turns, evidence_at = _assemble(rng, people, units, starter, greeting, farewell, beats)
        # Too long: drop small talk first, then echoes; facts stay.
        small_talk = [index for index, (_, position) in enumerate(units) if position is None]
        echoes = [
            index for index, (_, position) in enumerate(units) if position is not None and beats[position][1].evidence is None
        ]
        if len(turns) <= longest or not (small_talk or echoes):
            return turns, evidence_at
        del units[(small_talk or echoes)[-1]]


def _assemble(
    rng: random.Random,
    people: tuple[Person, Person],
    units: list[_Unit],
    starter: int,
    greeting: tuple[str, str],
    farewell: tuple[str, str],
    beats: list[tuple[int, _Beat]],
) -> tuple[list[tuple[int, str]], dict[int, int]]:
    turns = [
        (starter, greeting[0].format(you=people[1 - starter].name)),
        (1 - starter, greeting[1].format(you=people[starter].name)),
    ]
    evidence_at: dict[int, int] = {}
    for lines, position in units:
        if position is None:  # small talk: whoever did not speak last starts it
            first = 1 - turns[-1][0]
            turns.extend(
                ((first + offset) % 2, line.format_map(_Slots(rng, people[(first + offset + 1) % 2].name)))
                for offset, line in enumerate(lines)
            )
            continue
        owner = beats[position][0]
        if lines[0][0] == turns[-1][0]:  # the same speaker twice: the other one speaks first
            turns.append((1 - turns[-1][0], rng.choice(HANDOVERS if lines[0][0] == owner else ACKNOWLEDGEMENTS)))
        if beats[position][1].evidence is not None:
            evidence_at[position] = len(turns) + beats[position][1].evidence
        turns.extend(lines)
    closer = 1 - turns[-1][0]
    turns += [(closer, farewell[0]), (1 - closer, farewell[1])]
    return turns, evidence_at


def _user(index: int, people: tuple[Person, Person], *, seed: int, sessions: tuple[int, int], turns: tuple[int, int]) -> User:
    rng = random.Random(f"{seed}:user:{index}")
    session_count = rng.randint(*sessions)
    dates = [
        datetime(2022, 1, 3, tzinfo=UTC)
        + timedelta(days=rng.randint(0, 400), hours=rng.randint(8, 21), minutes=rng.randint(0, 59))
    ]
    for _ in range(session_count - 1):
        dates.append(dates[-1] + timedelta(days=rng.randint(6, 30), hours=rng.randint(-6, 6), minutes=rng.randint(0, 59)))

    # Stories: both speakers draw from the same kinds, so the friend's dog is the hardest distractor.
    # Every kind's first telling comes before any second one, so a short conversation gets variety.
    kinds = []
    for telling in range(max(times for _, times in STORIES)):
        told = [(speaker, builder) for speaker in (0, 1) for builder, times in STORIES if times > telling]
        rng.shuffle(told)
        kinds += told
    wanted = max(2, round(session_count * 2.2))
    used: set[str] = {people[0].name, people[1].name}
    stories = []
    for speaker, builder in kinds[:wanted]:
        context = _Context(rng=rng, owner=people[speaker], other=people[1 - speaker], used=used)
        story = builder(context)
        story.owner = speaker
        story.echoes = context.echoes
        stories.append(story)

    plan = _schedule(rng, stories, session_count)
    # One to three echoes of each story, in later sessions than the story began (echoes look back).
    echoes: list[list[tuple[int, _Beat]]] = [[] for _ in range(session_count)]
    began = {story: number for number, told in enumerate(plan) for story, beat in told if beat == 0}
    for story_index, story in enumerate(stories):
        later = list(range(began[story_index] + 1, session_count))
        for line in rng.sample(story.echoes, min(len(story.echoes), rng.randint(1, 3))) if later else []:
            speaker = _Context(rng=rng, owner=people[story.owner], other=people[1 - story.owner])
            echoes[rng.choice(later)].append((story.owner, _echo(speaker, line)))
    built: list[Session] = []
    located: dict[tuple[int, int], tuple[str, datetime]] = {}  # (story, beat) -> (dialog id, session date)
    for number, (started, told) in enumerate(zip(dates, plan, strict=True), start=1):
        beats = [(stories[story].owner, stories[story].beats[beat]) for story, beat in told]
        lines, evidence_at = _session_lines(rng, people, beats + echoes[number - 1], rng.randint(*turns), turns[1])
        for position, (story, beat) in enumerate(told):
            located[(story, beat)] = (f"D{number}:{evidence_at[position] + 1}", started)
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
            evidence = tuple(located[(story_index, beat)][0] for beat in draft.beats)
            questions.append(Question(text=draft.text, evidence=evidence, category=draft.category, answer=answer))
    tallies: dict[tuple[int, str], list[int]] = {}
    for story_index, story in enumerate(stories):
        if story.tally is not None:
            tallies.setdefault((story.owner, story.tally[0]), []).append(story_index)
    for (owner, question), members in tallies.items():
        if len(members) >= 2:
            person = people[owner]
            questions.append(
                Question(
                    text=question.format(X=person.name, P=person.object if person.object == "him" else person.possessive),
                    evidence=tuple(located[(member, 0)][0] for member in members),
                    category="multi-hop",
                    answer="; ".join(stories[member].tally[1] for member in members),
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
    *, users: int = 6, seed: int = 1, sessions: tuple[int, int] = (20, 30), turns: tuple[int, int] = (15, 30)
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
