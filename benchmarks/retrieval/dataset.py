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

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

CATEGORIES = ("single-hop", "multi-hop", "temporal", "open-domain")


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
WHEN = (
    ("yesterday", 1, None),
    ("last night", 1, None),
    ("this morning", 0, None),
    ("the day before yesterday", 2, None),
    ("three days ago", 3, None),
    ("four days ago", 4, None),
    ("a week ago", 7, None),
    ("ten days ago", 10, None),
    ("two weeks ago", 14, None),
    ("on Saturday", None, 5),
    ("on Sunday", None, 6),
    ("on Monday", None, 0),
    ("last Friday", None, 4),
    ("last Tuesday", None, 1),
    ("last Thursday", None, 3),
    ("last weekend", None, 5),
    ("on Wednesday", None, 2),
)


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
SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("finally", "at last", "eventually"),
    ("can't wait", "so excited", "counting the days"),
    ("amazing", "incredible", "unreal", "brilliant"),
    ("terrified", "scared stiff", "petrified"),
    ("this weekend", "at the weekend", "over the weekend"),
    ("next month", "in a few weeks", "soon"),
    ("honestly", "to be honest", "genuinely", "seriously"),
    ("apparently", "so they tell me", "allegedly"),
    ("really", "genuinely", "properly"),
    ("I think", "I reckon", "I guess"),
    ("so proud", "so chuffed", "beaming"),
    ("broke down", "conked out", "gave up"),
    ("nearly cried", "almost cried", "welled up"),
    ("my legs", "my poor legs", "my calves"),
    ("Big news", "News", "Guess what"),
    ("I love it", "I adore it", "I'm obsessed"),
    ("so far so good", "all good so far", "no complaints yet"),
    ("can't put it down", "can't stop reading", "hooked"),
    ("Never again", "Not doing that again", "Once was enough"),
    ("the worst", "the most awful", "the absolute worst"),
    ("Obsessed", "Hooked", "Addicted"),
    ("a bit", "a little", "slightly"),
    ("started", "began"),
    ("waited two hours", "sat there for two hours", "spent two hours waiting"),
    ("I said yes", "I accepted", "I took it"),
    ("Bit scary", "Slightly terrifying", "A bit daunting"),
    ("Best decision ever", "No regrets", "Best thing we've done"),
    ("a handful", "a menace", "chaos on legs"),
    ("so nervous", "so anxious", "a wreck"),
    ("loved", "adored", "really enjoyed"),
    ("gorgeous", "beautiful", "stunning"),
    ("lovely", "wonderful", "so nice"),
    ("huge", "massive", "big"),
    ("tiny", "little", "small"),
    ("Change of plans", "Plans changed", "Slight change of plan", "Update"),
    ("we booked", "we've gone for", "we picked", "we switched to"),
    ("instead", "in the end", "now"),
    ("can you believe it", "how did that happen", "where does the time go"),
    ("cake ordered", "cake's booked", "cake sorted"),
    ("played for almost three hours", "played forever", "did nearly three hours"),
    ("starting a new job", "taking a new job", "off to a new job"),
    ("who says", "who thinks", "who reckons"),
    ("Who knew", "Who'd have thought", "Go figure"),
    ("that rash was", "the rash turned out to be", "the rash was down to"),
    ("in the autumn", "after the summer", "in September"),
    ("I'll be visiting a lot", "I'll be there all the time", "expect me on their sofa a lot"),
    ("My ears are still ringing", "My ears are still buzzing", "I can barely hear"),
    ("on the phone", "down the phone", "on a video call"),
    ("Reading every label now", "I read every label now", "Label-checking everything now"),
    ("I cried", "I sobbed", "I teared up"),
    ("the tow truck", "the recovery truck", "a tow"),
    ("so that's an expensive month", "so there goes my savings", "expensive"),
    ("I really love it there", "it's the highlight of my week", "I adore it"),
    ("every week", "weekly", "most weeks"),
    ("went down very well", "was a hit", "went down a storm"),
    ("I'm hobbling around", "I'm limping everywhere", "I'm on the sofa"),
    ("rest for a month", "no sport for a month", "a month off"),
    ("Awful week, then fine", "First week was hell, now fine", "Rough start, fine now"),
    ("I feel great", "I feel brilliant", "I've never felt better"),
    ("in the ground", "planted", "in"),
    ("along the back fence", "by the back fence", "down the side of the garden"),
    ("Seems sharp", "Seems clever", "Seems on the ball"),
    ("put me in charge of", "gave me", "handed me"),
    ("Big vote of confidence", "Nice to be trusted", "Feels good"),
    ("way more than last year", "double last year", "a record"),
    ("I'm so proud of everyone", "Everyone was amazing", "What a team"),
    ("don't laugh", "no judgement", "I know, I know"),
    ("it's a texture thing", "it's the texture", "it's just wrong"),
    ("third time this week", "again and again", "every day this week"),
    ("for the rest of my life", "forever", "until I die"),
    ("I can't stand", "I hate", "I really don't like"),
    ("close to the river", "near the river", "by the water"),
    ("The commute was killing me", "The commute was awful", "I was sick of the commute"),
    ("signed the lease", "signed for a flat", "got the keys sorted"),
    ("Moving in", "We move in", "The move is"),
    ("a new personal best", "my best time ever", "a PB"),
    ("not bad for someone who hates running", "not bad for a non-runner", "not bad at all"),
    ("Crossed the line", "Finished", "Got over the line"),
    ("days of pure bliss", "days of heaven", "blissful days"),
    ("was not nearly enough", "wasn't enough", "flew by"),
    ("The food alone was worth the flight", "The food was unbelievable", "We ate so well"),
    ("has already claimed the sofa", "owns the sofa now", "sleeps on the sofa"),
    ("Sleep is a distant memory", "I haven't slept", "Goodbye, sleep"),
    ("is officially ours", "is ours now", "is officially part of the family"),
    ("I accepted the offer", "I took the offer", "I said yes to the offer"),
    ("Handed in my notice", "Resigned", "Quit my job"),
    ("terrified and excited", "nervous and excited", "thrilled and scared"),
    ("Better hours", "Nicer hours", "Saner hours"),
)
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
FILLERS = (
    "Haha.",
    "Honestly?",
    "Oh!",
    "So.",
    "Okay so...",
    "Ugh.",
    "Well!",
    "Hmm.",
    "Ha!",
    "Oh man.",
    "Right, so.",
    "Lol.",
    "Argh.",
    "Okay okay.",
)
PREAMBLES = (
    "Ugh, long week.",
    "Haha okay so.",
    "Not much, honestly, work is work.",
    "Ah, so many things!",
    "Well, where do I start.",
    "Oh, and before I forget.",
    "Sorry, I've been terrible at replying.",
    "Okay, random update.",
    "Good, I think? Busy.",
    "Where to even begin.",
    "Been a weird couple of weeks, to be honest.",
    "You'll laugh at this.",
    "Not a lot, but one thing.",
)
AFTERTHOUGHTS = (
    "Anyway, how are you?",
    "Life, eh.",
    "What a month it's been.",
    "How was your weekend?",
    "Tell you more when I see you.",
    "I'm still processing it, honestly.",
    "Anyway!",
    "So yeah.",
    "We'll see how it goes.",
    "Can't complain, really.",
    "Haha.",
    "Don't tell anyone yet.",
    "More soon.",
    "I think, anyway.",
)


# What friends add to a reply: a question back, a kind word, a thought that carries no fact.
FOLLOW_UPS = (
    "How are you feeling about it?",
    "Tell me everything.",
    "I want all the details.",
    "How did that even happen?",
    "What made you decide that?",
    "Was it as good as you hoped?",
    "Are you doing okay?",
    "What's next?",
    "I need to hear more about this.",
    "How's everyone taking it?",
    "Did you see that coming?",
    "You have to show me next time.",
    "How long have you been thinking about that?",
    "Was that the plan all along?",
    "What did everyone else think?",
    "Are you going to do it again?",
    "How's the rest of your week looking?",
    "Did you manage to get some rest after?",
    "What was the best part?",
    "Who else was there?",
)
SUPPORT = (
    "I'm really proud of you.",
    "You always manage to surprise me.",
    "I love hearing this kind of thing.",
    "You deserve good things.",
    "Honestly, you inspire me.",
    "I hope you're being kind to yourself.",
    "That must have been a lot.",
    "I'm glad you told me.",
    "That's made my day, honestly.",
    "I'm always here if you need me.",
    "You've had such a year, you know.",
    "It sounds like you really needed that.",
    "I've been meaning to ask how things were going.",
    "This is why I love our chats.",
    "You always find the fun in things.",
    "I wish I had half your energy.",
    "Remind me to tell you my news later too.",
    "It's so good to hear from you.",
)
ELABORATIONS = (
    "It's been that kind of week.",
    "I don't know how people do it.",
    "Honestly, I needed that.",
    "Not that I'm complaining.",
    "You know how it is.",
    "Some days are just like that.",
    "I've been thinking about it all day.",
    "It's the little things, right?",
    "I should really do something about it.",
    "Maybe that's just me.",
    "Long story, I'll tell you properly sometime.",
    "It was a whole thing.",
    "I'm trying not to overthink it.",
    "Anyway, it made me smile.",
    "The week has flown by, honestly.",
    "I'm running on about four hours of sleep.",
    "Everything takes twice as long as I think it will.",
    "It's always something, isn't it?",
    "I only realised it halfway through the day.",
    "Not my finest moment, to be fair.",
    "I'll never learn, will I.",
    "Part of me loved it, part of me didn't.",
    "I was not prepared for that.",
    "At least the weather was nice.",
    "Classic me.",
    "We'll see, I suppose.",
)


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


LEAD_INS = (
    "Okay, enough about me.",
    "Anyway!",
    "Oh, before I forget.",
    "Speaking of which.",
    "Random, but.",
    "So, I meant to ask.",
    "Wait, I forgot to ask.",
    "Oh, that reminds me.",
    "Right, your turn.",
    "Changing the subject completely.",
)


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


ECHO_REACTIONS = (
    "Haha, sounds about right.",
    "Oh no!",
    "Ha, I bet.",
    "Keep me posted.",
    "That made me laugh.",
    "Classic.",
    "Hang in there.",
    "Oh, I can imagine.",
    "Ha! Of course.",
    "Sending strength.",
    "Honestly, same.",
    "You'll get there.",
)


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


NEWS_LEADS = (
    "So what's new with you?",
    "Anything exciting happening on your end?",
    "How have things been lately?",
    "Tell me something good, I need it.",
    "What have you been up to?",
    "Okay, your turn. Any news?",
    "How are things with you?",
    "Catch me up, what's going on?",
    "Any news since we last talked?",
)
CHEERS = (
    "No way, that's huge!",
    "Wow, congratulations!",
    "Oh I love that for you.",
    "That's amazing. How do you feel about it?",
    "Good for you, honestly.",
    "Wait, really? Tell me everything.",
    "Yay! So happy for you.",
    "That's brilliant news.",
    "Ahh, finally! You deserve it.",
)
SYMPATHY = (
    "Oh no, that sounds awful.",
    "Ugh, I'm sorry. Are you okay?",
    "That's rough. Hope it gets better soon.",
    "Yikes. What a week you're having.",
    "Oh you poor thing.",
    "That's so unfair. Need anything?",
    "Ouch. Sending hugs.",
)


# --- The stories ---------------------------------------------------------------------------------

SPECIES = (
    # (species, a young one)
    ("dog", "puppy"),
    ("cat", "kitten"),
    ("rabbit", "bunny"),
    ("parrot", "baby parrot"),
    ("guinea pig", "guinea pig"),
    ("tortoise", "baby tortoise"),
)
PET_EVENTS = (
    # (the event, {who} did it; a question on it; the answer; the event as a question says it)
    (
        "{who} swallowed one of my socks {when}, so that was a [fun|long] night at the emergency vet.",
        "What did {X}'s {species} swallow?",
        "a sock",
        "swallow a sock",
    ),
    (
        "{who} won second prize at the [neighbourhood|village] pet show {when}! [Rosette and everything.|I cried a bit.]",
        "What prize did {X}'s {species} win?",
        "second prize at a pet show",
        "win a prize at the pet show",
    ),
    (
        "{who} got stung by a bee {when} and {pp} whole face puffed up[, poor thing|].",
        "What stung {X}'s {species}?",
        "a bee",
        "get stung",
    ),
    (
        "{who} chewed through my laptop charger {when}. [Third one this year.|I'm not even mad. Okay, I'm a bit mad.]",
        "What did {X}'s {species} chew through?",
        "a laptop charger",
        "chew through a charger",
    ),
    (
        "{who} had a small operation on {pp} leg {when}, {ps}'s wearing the cone of shame now.",
        "Which part of {X}'s {species} was operated on?",
        "a leg",
        "have an operation",
    ),
    (
        "{who} worked out how to open the kitchen cupboard {when} and ate half a loaf of bread.",
        "What did {X}'s {species} eat after opening the cupboard?",
        "half a loaf of bread",
        "raid the kitchen cupboard",
    ),
    (
        "{who} escaped through a gap in the fence {when}[, my heart stopped|]. A neighbour found {po} outside the bakery.",
        "Where was {X}'s {species} found after escaping?",
        "outside the bakery",
        "escape through the fence",
    ),
)


def _pet(c: _Context) -> _Story:
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
                (
                    "We're thinking about getting a {young}, the kids won't stop asking.",
                    "I've been looking at {species} adoption pages again. Dangerous.",
                    "[Seriously|Sort of] considering a {species}. Talk me out of it?",
                    "Went to the shelter to 'just look' at the {species}s. Didn't take one home. Yet.",
                ),
                values,
                ("Do it! Do it!", "A {species}? That's a big commitment.", "Oh, you'd be such a good {species} parent."),
            )
        )
    adopted = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(
                said=(
                    "[Guess what|Big news|Okay, news], I [finally|actually] adopted a {young}! {Ps}'s called {pet} and {ps} has"
                    " [already claimed the sofa|eaten a shoe already|not left my side since].",
                    "We picked up a little {young} from the shelter [at the weekend|on Saturday|last week]. [Named|Called] {po} {pet}.",
                    "So I have a new flatmate: a {species} called {pet}. [Sleep is a distant memory.|The flat is chaos.|I'm in love.]",
                    "The rescue centre rang back and {pet} is officially ours, a {months}-month-old {species}.",
                    "[Oh, I never told you!|Did I tell you?] The kids talked me into a {young}. {pet}. [Yes, they chose the name.|"
                    "Don't ask who picked the name.]",
                    "Brought home a {young} [last week|on Sunday], {pet}, and the [flat|house] already smells different haha.",
                    "Meet {pet}, our new {species}. [{Ps} is tiny and furious.|{Ps} hates the hoover already.]",
                ),
                asks=(
                    "Did you end up getting the {young}?",
                    "So did you get the {species} in the end?",
                    "How did the {species} hunt go?",
                    "Any news on the {young} front?",
                ),
                replies=(
                    "Yes! [We picked {po} up on Saturday|Brought {po} home on Sunday], {pet} is {pp} name.",
                    "Yep, {pet}. {Ps}'s a handful.",
                    "We did! Meet {pet}. [Sleep is a distant memory.|{Ps} has already claimed the sofa.]",
                    "[Yes|Yep], {pet} has moved in. [Chaos.|Best decision ever.|The neighbours are in love.]",
                ),
                opens=(
                    "So we went to the [shelter|rescue centre] on Saturday 'just to look' at the {species}s...",
                    "Guess who came home with a {young} this weekend.",
                    "[Okay, so|So] we have a new member of the family. Four legs, [needy|loud], {species}.",
                ),
                probes=("Nooo! What's {pp} name?", "Stop. Name? Pictures?", "You didn't! What did you call {po}?"),
                answers=(
                    "{pet}! [The kids chose it.|After my grandad's favourite biscuit, long story.]",
                    "{pet}. [Pictures tonight, I promise.|{Ps} already answers to it, sort of.]",
                ),
                leads=NEWS_LEADS,
                reactions=(
                    "Oh my gosh, send pictures immediately!",
                    "That's adorable. How is everyone adjusting?",
                    "A {species}! Is the house still in one piece?",
                    "I'm so jealous, I've wanted a {species} for years.",
                ),
                more=(
                    "Mostly chewing and sleeping so far.",
                    "We're still learning each other's routines.",
                    "Pictures tonight, promise.",
                ),
            ),
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
                asks=("How's {pet} doing?", "How's the little one?", "Any {pet} news?", "And how's {pet} getting on?"),
                replies=(
                    "[Don't ask.|Ha, funny you should ask.|Eventful!|Oh, where to start.] " + event.replace("{who}", "{Ps}"),
                ),
                leads=("How's the little one doing?", "How's life with the new pet?", "Any chaos at home this week?"),
                reactions=SYMPATHY + ("Haha, what a character.", "Pets are a full-time job, honestly."),
            ),
            event_values,
            when=when,
        )
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "The {species} woke me up at five again, I'm running on coffee.",
            "Vet bills are no joke. Never getting a second {species}. Probably.",
            "Our {species} is terrified of the hoover, it's ridiculous.",
            "Walking the {species} in the rain is character building, apparently.",
            "{pet} stole a whole croissant off the table this morning.",
            "Someone at the park asked if they could adopt {pet}. Tempting, some days.",
            "{pet} has a new favourite spot: my pillow.",
        )
    ]
    by_name = c.rng.random() < 0.5
    return _Story(
        beats=beats,
        questions=[
            _Draft(
                "single-hop",
                c.ask(
                    "What is the name of {X}'s {s}?",
                    "What did {X} name {p} {s}?",
                    "What is {X}'s {s} called?",
                    "What's the name of the {s} {X} adopted?",
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
JOB_PERKS = (
    "a four-day week",
    "a shorter commute",
    "a proper pay rise",
    "working from home on Fridays",
    "a team that actually likes each other",
    "free lunches",
)


def _job(c: _Context) -> _Story:
    company = f"{c.rare()} {c.pick(COMPANY_KINDS)}"
    perk = c.pick(JOB_PERKS)
    phrase, when = c.when()
    values = {"company": company, "perk": perk, "when": phrase, "weekday": c.pick(WEEKDAYS[:5])}
    beats = []
    if c.rng.random() < 0.6:
        beats.append(
            _setup(
                c,
                (
                    "Got an interview at {company} on {weekday}, wish me luck.",
                    "I applied for a job at {company}, [probably nothing will come of it|fingers crossed].",
                    "Second interview at {company} [next week|on {weekday}], I'm [sweating|so nervous].",
                ),
                values,
                ("You'll smash it!", "Fingers crossed!", "They'd be lucky to have you."),
            )
        )
    signed = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(
                said=(
                    "[Big news|So!], I accepted the offer from {company} {when}! [Starting next month.|I start in two weeks.]",
                    "Handed in my notice {when}. I'm joining {company}, [terrified and excited|excited and terrified]."
                    " [Mostly for {perk}.|And there's {perk}.]",
                    "Signed the contract with {company} {when}. [Better hours,|Less stress,] {perk}.",
                    "{company} [called|rang] {when} and offered me the job, and I said yes! {perk}, can you believe it.",
                ),
                asks=(
                    "How did the interview go?",
                    "Did you hear back about that job?",
                    "Any news on the job front?",
                    "So? Did they call?",
                ),
                replies=(
                    "They offered it to me {when} and I said yes! {company}, here I come.",
                    "Got it! Signed with {company} {when}. [The best bit is|And] {perk}.",
                    "I'm in! [Contract signed {when}.|Signed {when}.] {company} it is, and {perk}.",
                ),
                leads=NEWS_LEADS,
                reactions=CHEERS + ("About time someone appreciated you!", "Are you nervous about the first day?"),
                more=(
                    "A bit. Mostly I'm relieved.",
                    "Drinks on me when I get my first pay cheque.",
                    "I'll miss my old team though.",
                ),
            ),
            values,
            when=when,
        )
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "First week at the new job done, my brain is full.",
            "The new office has free coffee, so that's a win.",
            "Still getting used to the new job, so many meetings.",
            "My old boss messaged me asking how the new job is going. Awkward.",
            "New job, new commute, new lunch spot. Adjusting.",
        )
    ]
    return _Story(
        beats,
        [
            _Draft(
                "single-hop",
                c.ask("Which company did {X} join?", "Who is {X}'s new employer?", "Where does {X} work now?", X=X),
                company,
                (signed,),
            ),
            _Draft(
                "single-hop",
                c.ask("What did {X} like about the new job?", "What perk came with {X}'s new job?", X=X),
                perk,
                (signed,),
            ),
            _Draft(
                "temporal",
                c.ask("When did {X} accept the new job?", "When did {X} say yes to {company}?", X=X, company=company),
                "{date}",
                (signed,),
                dated=signed,
            ),
        ],
    )


def _move(c: _Context) -> _Story:
    city = c.mention("city", c.fresh(CITIES))
    phrase, when = c.when()
    values = {"city": city, "when": phrase, "weekday": c.pick(WEEKDAYS)}
    beats = []
    if c.rng.random() < 0.5:
        beats.append(
            _setup(
                c,
                (
                    "Flat hunting is [soul-destroying|a nightmare], everything is tiny or damp.",
                    "We've started looking at flats [in another city|further out], the rent here is insane.",
                    "Viewed four flats [this weekend|on {weekday}]. All terrible. One had a bath in the kitchen.",
                ),
                values,
                ("Good luck, the market is brutal.", "Where are you looking?", "Ugh, flat hunting is the worst."),
            )
        )
    signed = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(
                said=(
                    "We [finally|] signed the lease on a flat in {city} {when}! [Moving in next month.|Keys soon.]",
                    "[Big news:|So,] I'm relocating to {city}, signed for a place {when}. The commute was killing me.",
                    "Found a little two-bedroom place in {city}, close to the river. Signed {when}[, eek|].",
                ),
                asks=(
                    "Any luck with the flat hunt?",
                    "How's the house hunting going?",
                    "Did you find a place in the end?",
                ),
                replies=(
                    "[Finally, yes!|We got one!] Two bedrooms in {city}, [close to the river|above a bakery]. Signed {when}.",
                    "Yes! {city}. Signed the lease {when}, [can't quite believe it|still pinching myself].",
                ),
                opens=("[Okay, so|So] we signed a lease {when}. Not here.", "I have news: we're leaving town. Signed {when}."),
                probes=("What?! Where to?", "Wait, where are you going?"),
                answers=(
                    "{city}! [Close to the river.|Near my sister.|I know, I know.]",
                    "{city}. [It just made sense.|Big change.]",
                ),
                leads=NEWS_LEADS,
                reactions=(
                    "A fresh start! Do you know anyone there?",
                    "Wow, that's a big move.",
                    "I'll help you pack if you feed me.",
                    "I've heard great things about {city}.",
                ),
                more=(
                    "Only one old friend, but I'll manage.",
                    "The boxes are winning at the moment.",
                    "I'm excited and terrified in equal measure.",
                ),
            ),
            values,
            when=when,
        )
    )
    X = c.owner.name
    questions = [
        _Draft(
            "temporal",
            c.ask("When did {X} sign the lease on the new flat?", "When did {X} sign for the place in {city}?", X=X, city=city),
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
                _Telling(
                    said=(
                        "[Plot twist:|Change of plan:] the {city} flat fell through, so we're moving to {other} instead.",
                        "We're not going to {city} after all. [The landlord sold it.|Long story.] It's {other} now.",
                    ),
                    asks=("How's the move going?", "All packed for the move?"),
                    replies=(
                        "Ha. It fell through, the landlord sold up. We're going to {other} instead.",
                        "[Different place!|Plot twist.] {other}, not {city}. [Don't ask.|It's a long story.]",
                    ),
                    reactions=("Oh no! But {other} sounds nice?", "What a saga.", "Honestly, maybe for the best."),
                ),
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
                "Which city is {X} moving to?",
                "Where is {X} moving?",
                "Where will {X} be living from now on?",
                "In what town does {X} plan to settle down?",
                X=X,
            ),
            moved_to,
            where,
        )
    )
    c.echoes = [
        c.say(line, values)
        for line in (
            "Still unpacking boxes in the new flat.",
            "The new neighbourhood is growing on me.",
            "Still no internet at the new place, send help.",
            "Found a great bakery near the new flat, dangerous.",
            "The movers lost a box of plates. Of course they did.",
        )
    ]
    return _Story(beats, questions)


RACES = (
    ("half marathon", "1:{m:02d}"),
    ("10k", "{m}:{s:02d}"),
    ("marathon", "3:{m:02d}"),
    ("triathlon", "2:{m:02d}"),
    ("trail race", "1:{m:02d}"),
)


def _race(c: _Context) -> _Story:
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
                (
                    "Signed up for the {city} {race}, [what have I done|training starts Monday].",
                    "The {city} {race} is [on Sunday|next weekend|in three weeks], I'm [terrified|so nervous|not ready].",
                    "Did a long training run {when} for the {city} {race}. Legs like jelly.",
                ),
                values,
                ("You've got this!", "Rather you than me!", "I'll come and cheer!"),
            )
        )
    ran = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(
                said=(
                    "I ran the {city} {race} {when}! {finish}, and my legs have filed a complaint.",
                    "Did the {city} {race} {when}. Finished in {finish}, not bad for someone who hates running.",
                    "{when} I finished the {city} {race} in {finish}, [a new personal best|a minute off my best]!",
                    "[Survived|Completed] the {race} in {city} {when}. {finish}. [Never again.|Already looking at the next one.]",
                ),
                asks=(
                    "How did the {race} go?",
                    "Did you survive the {city} race?",
                    "So? How was race day?",
                    "Wait, wasn't the {race} this week?",
                ),
                replies=(
                    "[Survived!|Done!|Finished!] {finish}, {when}. [My legs have filed a complaint.|Never again. Until next year.]",
                    "{finish}! Crossed the line {when} and nearly cried.",
                    "It was {when}, and I did {finish}. [Pretty happy with that.|Could've been worse!]",
                ),
                leads=("How was your weekend?", "Did you do anything fun recently?", "You sound tired, what happened?"),
                reactions=(
                    "Whoa, respect. I get tired walking to the bus.",
                    "That's so impressive!",
                    "How are your knees?",
                    "Are you going to do another one?",
                ),
                more=(
                    "My knees are not speaking to me.",
                    "Never again. Until next year.",
                    "Already looking at the next one, help.",
                ),
            ),
            values,
            when=when,
        )
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "Back out running, slowly this time.",
            "I'm thinking about signing up for another race, stop me.",
            "My running watch died mid-run, tragedy.",
            "Did a long run this morning, legs like jelly.",
            "Still have my medal on the fridge.",
            "No more {race}s for a while, [I promised my knees|my knees have spoken].",
        )
    ]
    return _Story(
        beats=beats,
        questions=[
            _Draft(
                "temporal",
                c.ask(
                    "When did {X} run the {city} {race}?",
                    "When did {X} do that {race} in {city}?",
                    "When was {X}'s race in {city}?",
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
                    "What was {X}'s finishing time in the {city} {race}?",
                    "How long did it take {X} to complete the {race} in {city}?",
                    "How fast did {X} finish in {city}?",
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
    place = c.mention("place", c.fresh(PLACES))
    days = c.rng.randint(4, 16)
    phrase, when = c.when()
    values = {
        "place": place,
        "days": days,
        "when": phrase,
        "detail": c.pick(
            (
                "The food alone was worth the flight.",
                "It rained every single day and I loved it anyway.",
                "I took about a thousand photos.",
                "Already planning to go back.",
            )
        ),
    }
    beats = []
    if c.rng.random() < 0.5:
        beats.append(
            _setup(
                c,
                (
                    "Just booked flights to {place}!",
                    "Counting down the days to {place}.",
                    "Reading everything about {place} before we go, [too much|obsessively].",
                ),
                values,
                ("Jealous!", "Oh, you'll love it.", "Bring me back something!"),
            )
        )
    went = len(beats)
    beats.append(
        _tell(
            c,
            _Telling(
                said=(
                    "[Got back|Flew home] {when} from {days} days in {place}. {detail}",
                    "Back from {place} {when}! {days} days was not nearly enough.",
                    "We flew home from {place} {when}, {days} days of pure bliss. {detail}",
                ),
                asks=("How was {place}?", "Welcome back! How was {place}?", "You're back from {place}! Tell me everything."),
                replies=(
                    "[Unreal.|Magic.|So good.] {days} days wasn't enough. Flew back {when}. {detail}",
                    "[Amazing|Perfect], [all|] {days} days of it. [We landed|Got home] {when} and I miss it already.",
                ),
                leads=("You've been quiet lately!", "Where have you been hiding?", "How was the time off?"),
                reactions=(
                    "Jealous! What was the highlight?",
                    "Oh that sounds dreamy.",
                    "I need a holiday so badly.",
                    "Did you get any sun?",
                ),
                more=("Honestly, just not checking email.", "The hiking, hands down.", "The people were so friendly."),
                ask_holds_answer=True,
            ),
            values,
            when=when,
        )
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "Still dreaming about that holiday.",
            "Printed some of the holiday photos for the fridge.",
            "Post-holiday blues are real, I want to go back.",
            "Made a dish we ate in {place}, it was not the same.",
        )
    ]
    return _Story(
        [*beats],
        [
            _Draft(
                "single-hop",
                c.ask("How many days did {X} spend in {place}?", "How long was {X}'s holiday in {place}?", X=X, place=place),
                f"{days} days",
                (went,),
            ),
            _Draft(
                "temporal",
                c.ask(
                    "When did {X} get back from {place}?",
                    "When did {X}'s holiday in {place} end?",
                    "When did {X} return from {place}?",
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
    instrument = c.mention("instrument", c.fresh(INSTRUMENTS))
    teacher = f"{c.pick(('Mr', 'Ms', 'Mrs'))} {c.rare()}"
    weekday = c.pick(WEEKDAYS[:5])
    values = {"instrument": instrument, "teacher": teacher, "weekday": weekday}
    beat = _tell(
        c,
        _Telling(
            said=(
                "I signed up for {instrument} lessons! Every {weekday} evening with a teacher called {teacher}.",
                "Started on the {instrument} at last, {weekday}s with {teacher}, who says I have potential,"
                " which I think is polite for terrible.",
                "My {weekday} nights are {instrument} nights now, {teacher} is [strict but lovely|terrifying|so patient].",
            ),
            opens=(
                "I did something brave and signed up for lessons.",
                "[Okay,|So,] I've gone back to music. Properly, with a teacher.",
            ),
            probes=("Lessons in what?!", "Ooh, what are you learning?", "Wait, which instrument?"),
            answers=(
                "{instrument}! {weekday} evenings, with a [teacher|woman|man] called {teacher}.",
                "The {instrument}. {teacher} [is very patient with me|has the patience of a saint], every {weekday}.",
            ),
            leads=("Picked up any new hobbies?", "What's keeping you busy these days?"),
            reactions=(
                "That's so cool, I always wanted to learn music.",
                "Play me something next time!",
                "Your neighbours must love you haha.",
            ),
            more=("Give me a year before you ask for a concert.", "The neighbours have been very patient."),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "Practised for an hour last night, the neighbours were thrilled.",
            "My fingers hurt from practising.",
            "I have a little recital coming up, terrified.",
            "Finally played a whole song without stopping!",
            "Missed my lesson this week, felt guilty all evening.",
        )
    ]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(
                    "Which instrument is {X} taking lessons in?",
                    "What instrument is {X} learning?",
                    "What is {X} practising to play these days?",
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
    relation = c.pick(("sister", "brother", "cousin", "oldest friend"))
    relative = c.fresh(PEOPLE)
    partner = c.fresh(PEOPLE)
    city = c.mention("city", c.pick(CITIES))
    phrase, when = c.when()
    values = {"relation": relation, "relative": relative, "partner": partner, "city": city, "when": phrase}
    first = _tell(
        c,
        _Telling(
            said=(
                "My {relation} {relative} just moved to {city} for work, so I'll be visiting a lot.",
                "{relative}, my {relation}, is starting a new job in {city} in the autumn.",
                "Spent the weekend helping my {relation} {relative} settle into {city}.",
            ),
            asks=("How's your {relation} doing?", "Is your {relation} still job hunting?"),
            replies=(
                "Good! {relative} [got a job in|is moving to] {city}, [so I'll visit a lot|leaving next month].",
                "{relative}'s off to {city}! [New job.|Finally.] [I'll miss them.|Free holidays for me.]",
            ),
            reactions=("Oh nice, free place to stay!", "How are they finding it?", "That's a big change for them."),
            more=("Loving it so far, apparently.", "Still unpacking, but happy."),
        ),
        values,
    )
    second = _tell(
        c,
        _Telling(
            said=(
                "{relative} got engaged to {partner} {when}! I cried on the phone.",
                "Huge news: {relative} and {partner} are engaged! {partner} proposed {when}.",
                "[Guess who's getting married|Wedding alert]: {relative}! {partner} [popped the question|proposed] {when}.",
            ),
            opens=("I have [family|big] news. {relative} rang {when}...", "Okay, so {relative} called me {when}, crying."),
            probes=("Good crying or bad crying?!", "Oh no, what happened?", "And?!"),
            answers=("[Engaged!|Good crying!] {partner} proposed. [I'm so happy.|I screamed.]", "Engaged to {partner}! Finally!"),
            leads=NEWS_LEADS,
            reactions=CHEERS + ("A wedding! Do they have a date yet?",),
            more=("Next summer, probably.", "No idea yet, they're still floating."),
        ),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "My {relation} keeps sending me wedding venue links.",
            "Wedding planning in our family is chaos.",
            "Talked to my {relation} for two hours last night, catching up on everything.",
            "Visited {city} again, {relative} showed me all the good cafes.",
        )
    ]
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
        (
            "{relative} has been dropping hints about rings, [ha|I'm dying].",
            "I think there's a proposal coming in the family, [shh|don't say a word].",
        ),
        values,
    )


def _taste(c: _Context) -> _Story:
    food = c.mention("food", c.fresh(FOODS))
    hates = c.rng.random() < 0.5
    if hates:
        telling = _Telling(
            said=(
                "Honestly I can't stand {food}, it's a texture thing.",
                "Don't judge me but {food} is the worst thing humans have ever invented.",
                "Someone put {food} in my lunch today and I nearly gagged.",
                "I'll eat almost anything, but {food}? [Never.|No chance.|Absolutely not.]",
            ),
            asks=("Want to try my {food}?", "Are you a {food} person?", "I made {food}, want some?"),
            replies=(
                "[Ugh,|Oh god,] no. [Texture thing.|Can't stand it.|Never have, never will.]",
                "Hard pass, sorry! [Hate it.|Yuck.]",
            ),
            reactions=(
                "Haha fair enough.",
                "Wow, strong opinion!",
                "I'm the complete opposite.",
                "Okay noted for when you come over.",
            ),
            ask_holds_answer=True,
        )
        questions = [
            _Draft(
                "single-hop",
                c.ask(
                    "What food does {X} hate?",
                    "Which dish would {X} send back if a waiter served it?",
                    "What should you never cook for {X}?",
                    X=c.owner.name,
                ),
                food,
                (0,),
            )
        ]
    else:
        telling = _Telling(
            said=(
                "{food} is the one thing I could eat every day for the rest of my life.",
                "I made {food} again, third time this week. Obsessed.",
                "Nothing beats {food}, I'd choose it for my last meal.",
            ),
            asks=("Do you like {food}?", "Want to get {food} later?", "Is {food} still your thing?"),
            replies=(
                "Are you kidding? [I could eat it every day.|It'd be my last meal.|Obsessed.]",
                "[Always.|Yes, yes, yes.] Best thing ever.",
            ),
            reactions=(
                "Haha fair enough.",
                "Wow, strong opinion!",
                "I'm the complete opposite.",
                "Okay noted for when you come over.",
            ),
            ask_holds_answer=True,
        )
        questions = [
            _Draft(
                "single-hop",
                c.ask(
                    "What food does {X} love most?",
                    "If {X} could keep a single dish forever, which one would it be?",
                    "What is {X}'s favourite thing to eat?",
                    X=c.owner.name,
                ),
                food,
                (0,),
            )
        ]
    beat = _tell(c, telling, {"food": food})
    c.echoes = [
        c.say(line)
        for line in (
            "Went to a tapas place and ordered all the wrong things.",
            "Trying to cook more at home, it's going okay.",
            "I had the weirdest craving today.",
        )
    ]
    return _Story([beat], questions)


def _plans(c: _Context) -> _Story:
    first_choice = c.mention("place", c.fresh(PLACES))
    second_choice = c.mention("place", c.fresh(PLACES))
    month = c.pick(MONTHS)
    reason = c.pick(
        (
            "the flights were half the price",
            "my partner got a work thing",
            "the hotel cancelled on us",
            "it's meant to be a heatwave there",
            "my friends are all going there",
        )
    )
    values = {"place": first_choice, "other": second_choice, "month": month, "reason": reason}
    first = _tell(
        c,
        _Telling(
            said=(
                "We're planning a week in {place} in {month}, I can't wait.",
                "Thinking of {place} for our {month} holiday, any tips?",
                "{month} is sorted: we want to do {place} this year.",
            ),
            asks=("Any holiday plans this year?", "Where are you going in {month}?"),
            replies=("{place}! [A whole week.|Can't wait.]", "[Probably|Thinking] {place}, in {month}. [Any tips?|Finally.]"),
            reactions=("Oh that'll be lovely.", "Bring me back something!", "Good choice, you deserve it."),
        ),
        values,
    )
    second = _tell(
        c,
        _Telling(
            said=(
                "Change of plans for {month}: we booked {other} instead, {reason}.",
                "Scrapped the original {month} plan, it's {other} now because {reason}.",
            ),
            asks=("How's the holiday planning going?", "Still on for {place}?"),
            replies=("Ha, no! [We switched to|It's] {other} now, {reason}.", "Plot twist: {other}. Because {reason}."),
            reactions=("Ooh, even better maybe?", "Plot twist!", "Honestly that sounds great too."),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line)
        for line in (
            "Holiday countdown has begun!",
            "Need to buy a new suitcase for the trip.",
            "Spent the evening reading hotel reviews, my eyes hurt.",
        )
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
            _Draft("single-hop", c.ask("Where is {X} going on holiday in {month}?", X=X, month=month), second_choice, (1,)),
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
    values = {"event": event, "money": c.rng.choice(range(240, 3000, 5))}
    beat = _tell(
        c,
        _Telling(
            said=(
                "The {event} raised ${money}, way more than last year!",
                "Final count from the {event}: ${money}. I'm so proud of everyone.",
                "We [counted|totted up] the {event} money: ${money}! [Not bad at all.|I nearly cried.]",
            ),
            asks=("How did the {event} go?", "Did the {event} do well?"),
            replies=("${money}! [Way more than last year.|Can you believe it?]", "Really well, ${money} in the end."),
            reactions=CHEERS + ("People are so generous when you ask.",),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line)
        for line in ("Counting coins for the fundraiser all evening.", "Baked forty cupcakes for the fundraiser, never again.")
    ]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask("How much did {X}'s {event} raise?", "What total did {X}'s fundraising effort bring in?", X=X, event=event),
                f"${values['money']}",
                (0,),
            )
        ],
        tallies=[("What has {X} volunteered at or raised money with?", f"a {event}", 0)],
    )


ITEMS = ("bike", "sofa", "kayak", "raincoat", "armchair", "scooter", "kettle", "rug", "lamp")


def _purchase(c: _Context) -> _Story:
    item = c.fresh(ITEMS)
    colour = c.pick(COLOURS)
    values = {"item": item, "colour": colour}
    beat = _tell(
        c,
        _Telling(
            said=(
                "Treated myself to a {colour} {item}, it's gorgeous.",
                "Finally replaced the old {item}. The new one is {colour}, don't laugh.",
                "Got a second-hand {item} this weekend, bright {colour}.",
            ),
            asks=("Did you get the new {item} in the end?", "What colour did you go for, for the {item}?"),
            replies=("Yes! {colour}. [Don't laugh.|Bold, I know.]", "[Went for|Got] {colour} in the end. Zero regrets."),
            reactions=("Ooh, fancy!", "Pictures or it didn't happen.", "Bold choice, I like it."),
            more=("It was a bargain, too.", "Zero regrets."),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values) for line in ("The new {item} is already covered in mud.", "Everyone keeps commenting on my {item}.")
    ]
    return _Story(
        tallies=[("What has {X} bought for {P}self lately?", f"a {colour} {item}", 0)],
        beats=[beat],
        questions=[
            _Draft(
                "single-hop",
                c.ask("What colour is {X}'s new {item}?", "What shade is the {item} {X} bought?", X=X, item=item),
                colour,
                (0,),
            )
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
    values = {"allergen": c.fresh(ALLERGENS), "weekday": c.pick(WEEKDAYS)}
    beat = _tell(
        c,
        _Telling(
            said=(
                "Turns out I'm allergic to {allergen}. Did the tests at the clinic on {weekday}.",
                "So that rash was {allergen}. Who knew I was allergic.",
                "The clinic confirmed it: {allergen} allergy. Reading every label now.",
            ),
            asks=("Did you get the test results back?", "What did the clinic say about the rash?"),
            replies=(
                "{allergen}, of all things. [Reading every label now.|Who knew.]",
                "It's {allergen}. [Great.|Brilliant. Just brilliant.]",
            ),
            leads=("How are you feeling?", "Did you sort out that health thing?"),
            reactions=SYMPATHY + ("Good to know at least!",),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line)
        for line in (
            "Reading food labels takes forever now.",
            "Carrying my medication everywhere now, just in case.",
            "Had to quiz the waiter about every ingredient last night.",
        )
    ]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask("What is {X} allergic to?", "What gives {X} a bad reaction, according to the doctor?", X=X),
                values["allergen"],
                (0,),
            )
        ],
        tallies=[("What allergies or injuries has {X} had?", f"an allergy to {values['allergen']}", 0)],
    )


VENUES = ("an old church", "a tiny basement bar", "the arena", "a festival in a field", "the town hall")


def _concert(c: _Context) -> _Story:
    band = c.pick(("The {r} Sisters", "{r} and the Tides", "The {r} Collective", "{r} Youth", "The Velvet {r}", "{r} Parade"))
    band = band.format(r=c.rare())
    phrase, when = c.when()
    values = {"band": band, "venue": c.pick(VENUES), "when": phrase}
    beat = _tell(
        c,
        _Telling(
            said=(
                "Saw {band} live {when}, at {venue}. They played for almost three hours.",
                "{when} I finally saw {band} at {venue}. My ears are still ringing.",
                "{band} at {venue} {when}. [Best gig of my life.|I lost my voice.]",
            ),
            asks=("Did you go to that gig in the end?", "How was the concert?"),
            replies=("[Yes!|Amazing!] {band}, {when}, at {venue}. [My ears are still ringing.|Three hours!]",),
            leads=("Been to any gigs lately?", "What did you get up to this week?"),
            reactions=(
                "I'm so jealous, were they good live?",
                "Never heard of them, send me a song.",
                "Live music is the best medicine.",
            ),
            more=("Best gig of my life, maybe.", "The crowd was half the fun."),
        ),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "Still humming that song from the gig.",
            "Bought tickets for another gig next month.",
            "My ears have finally stopped ringing.",
            "Can't stop listening to {band} since the gig.",
            "{band} are touring again in the autumn, [tempted|should I?].",
        )
    ]
    story = _Story(
        tallies=[("Which bands has {X} seen live?", band, 0)],
        beats=[beat],
        questions=[
            _Draft(
                "temporal",
                c.ask(
                    "When did {X} go to the gig at {venue}?",
                    "When did {X} see {band} live?",
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
        (
            "Got tickets for {band} at {venue}, [can't wait|so excited].",
            "{band} are playing {venue} soon, I'm going!",
            "Anyone want my spare ticket for {band}? [Kidding, I'm taking my sister.|Asking for a friend.]",
        ),
        values,
    )


def _restaurant(c: _Context) -> _Story:
    restaurant = f"{c.rare()} {c.pick(('Kitchen', 'Tavern', 'Bistro', 'Noodle Bar', 'Trattoria', 'Diner', 'Grill', 'Canteen'))}"
    dish = c.mention("dish", c.pick(DISHES))
    phrase, when = c.when()
    values = {"restaurant": restaurant, "dish": dish, "when": phrase}
    beat = _tell(
        c,
        _Telling(
            said=(
                "Had dinner at {restaurant} {when}, the {dish} was unreal.",
                "We [tried|finally went to] {restaurant} {when}. Get the {dish}. Trust me.",
                "{restaurant} {when} was a letdown, except the {dish}, which was perfect.",
            ),
            asks=("Where did you go for dinner in the end?", "Eaten anywhere good lately?"),
            replies=("{restaurant}, {when}. [The {dish}! Unreal.|Get the {dish} if you go.]",),
            leads=("Eaten anywhere good lately?", "I need a restaurant recommendation."),
            reactions=("Adding it to my list!", "Now I'm hungry, thanks.", "Was it expensive?"),
            more=("Not too bad, actually.", "Book ahead, it gets busy."),
        ),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "Ate way too much at dinner last night.",
            "We tried a new place in town, it was just okay.",
            "I keep thinking about that meal.",
            "Thinking of going back to {restaurant} already.",
            "Walked past {restaurant} and nearly went in again.",
        )
    ]
    story = _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(
                    "Which dish did {X} recommend at {r}?", "What should you order at {r}, according to {X}?", X=X, r=restaurant
                ),
                dish,
                (0,),
            ),
            _Draft(
                "temporal",
                c.ask(
                    "When did {X} have the {dish} {s} raved about?",
                    "When did {X} eat at {r}?",
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
        (
            "Booked a table at {restaurant} for [Friday|the weekend], finally.",
            "Has anyone tried {restaurant}? Going [soon|next week].",
        ),
        values,
    )


def _book(c: _Context) -> _Story:
    title = f"The {c.rare()} {c.pick(('Letters', 'Archive', 'Garden', 'Winter', 'Lighthouse', 'Orchard', 'Affair', 'Crossing'))}"
    author = f"{c.pick(PEOPLE)} {c.rare()}"
    values = {"title": title, "author": author}
    said, opinion = c.pick(
        (
            ("I'm halfway through {title} by {author} and can't put it down.", "gripping"),
            ("Just finished {title}. {author} really knows how to end a book.", "a great ending"),
            ("Book club picked {title} by {author} this month. Not my thing at all.", f"not for {c.owner.object}"),
        )
    )
    beat = _tell(
        c,
        _Telling(
            said=(said,),
            leads=("Reading anything good?", "I need something new to read."),
            reactions=(
                "Ooh, is it a thriller?",
                "Lend it to me when you're done?",
                "I haven't read a book in months, shame on me.",
            ),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line)
        for line in (
            "Book club was chaos, nobody had finished it.",
            "Stayed up way too late reading again.",
            "Looking for my next book, any ideas?",
        )
    ]
    questions = [_Draft("single-hop", f"What did {X} think of {title}?", opinion, (0,))]
    if author in beat.lines[beat.evidence[0]][1]:
        questions.append(
            _Draft("single-hop", c.ask("Who wrote {title}?", "Who is the author of {title}?", title=title), author, (0,))
        )
    return _Story([beat], questions, tallies=[("Which books has {X} mentioned?", title, 0)])


VOLUNTEERING = ("food bank", "library", "hospice", "community garden", "animal shelter", "charity shop")


def _volunteer(c: _Context) -> _Story:
    values = {"place": c.pick(VOLUNTEERING), "weekday": c.pick(WEEKDAYS)}
    beat = _tell(
        c,
        _Telling(
            said=(
                "I've started volunteering at the {place} on {weekday} mornings.",
                "Spent my {weekday} at the {place} again, I really love it there.",
                "{weekday}s are for the {place} now, I help out every week.",
            ),
            asks=("Are you still doing the volunteering thing?", "Where do you go on {weekday} mornings these days?"),
            replies=("Every {weekday}, at the {place}. [I love it.|Best part of my week.]",),
            leads=NEWS_LEADS,
            reactions=("That's lovely of you.", "How did you get into that?", "I should do something like that."),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line)
        for line in ("Volunteering this week was exhausting but so worth it.", "Met the loveliest people while volunteering.")
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"On which day does {X} volunteer at the {values['place']}?", values["weekday"], (0,)),
            _Draft(
                "single-hop",
                c.ask("Where does {X} volunteer?", "Where does {X} give {p} time for free?", X=X, p=c.owner.possessive),
                values["place"],
                (0,),
            ),
        ],
        tallies=[("What has {X} volunteered at or raised money with?", f"volunteering at the {values['place']}", 0)],
    )


def _birthday(c: _Context) -> _Story:
    child = c.fresh(PEOPLE)
    kid = c.pick(("son", "daughter"))
    age = c.rng.randint(3, 12)
    theme = c.pick(("dinosaur", "pirate", "space", "unicorn", "football", "jungle", "superhero", "mermaid"))
    values = {"kid": kid, "child": child, "age": age, "theme": theme}
    beat = _tell(
        c,
        _Telling(
            said=(
                "My {kid} {child} turns {age} next week, we're doing a {theme} party.",
                "{child} is going to be {age}, can you believe it? {theme} cake ordered.",
                "Planning {child}'s party: {age} candles, a {theme} theme, and twelve kids. Pray for me.",
            ),
            asks=("What's {child} doing for the birthday?", "Is {child}'s party sorted?"),
            replies=("{theme} party! [{age} already, can you believe it.|{child} picked it.] Cake's ordered.",),
            reactions=("Where does the time go!", "Oh that's adorable.", "Good luck with a room full of kids!"),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line) for line in ("Party planning is taking over my life.", "Twelve kids, one bouncy castle, zero regrets.")
    ]
    questions = [_Draft("single-hop", f"What theme did {X} pick for {child}'s birthday?", theme, (0,))]
    if str(age) in " ".join(text for _, text in beat.lines):
        questions.append(_Draft("single-hop", f"How old is {child} turning?", str(age), (0,)))
    return _Story([beat], questions, tallies=[("What family news has {X} shared?", f"{child} turning {age}", 0)])


def _course(c: _Context) -> _Story:
    subject = c.fresh(SUBJECTS)
    college = f"{c.rare()} College"
    values = {"subject": subject, "college": college, "weekday": c.pick(WEEKDAYS[:5])}
    beat = _tell(
        c,
        _Telling(
            said=(
                "I enrolled in an evening course in {subject} at {college}.",
                "Signed up for {subject} classes at {college}, {weekday}s after work.",
                "Back to school, sort of: {subject} at {college}, every {weekday}.",
            ),
            opens=("[Okay, so|So] I enrolled in a night class at {college}.", "I've gone back to college! Evenings only."),
            probes=("Ooh, studying what?", "No way, what subject?"),
            answers=("{subject}! [Always wanted to.|Don't laugh.]", "{subject}. [It's hard but fun.|My brain hurts already.]"),
            leads=("Any new projects?", "What's keeping you busy these days?"),
            reactions=("Look at you, lifelong learner!", "Is it hard?", "Teach me when you're done."),
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line)
        for line in (
            "Homework for my evening class, at my age!",
            "Had my first exam in years, nerve-wracking.",
            "My classmates are all half my age, it's fun.",
        )
    ]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(
                    "What subject is {X} taking classes in?",
                    "What does {X} study at {college}?",
                    "What is {X} learning about at night school?",
                    X=X,
                    college=college,
                ),
                subject,
                (0,),
            )
        ],
        tallies=[("What has {X} signed up to learn?", subject, 0)],
    )


ROADS = ("M4", "ring road", "coast road", "A9", "motorway", "bypass")


def _breakdown(c: _Context) -> _Story:
    phrase, when = c.when()
    values = {"road": c.pick(ROADS), "cause": c.pick(("clutch", "battery", "gearbox", "alternator", "radiator")), "when": phrase}
    beat = _tell(
        c,
        _Telling(
            said=(
                "My car broke down on the {road} {when}, waited two hours for the tow truck. The {cause}, apparently.",
                "{when} the car died on the {road}. The {cause}, so that's an expensive month.",
                "Stuck on the {road} {when} with smoke coming out of the bonnet. [It was|Mechanic says] the {cause}.",
            ),
            asks=("Why were you so late the other day?", "You sound stressed, what's up?"),
            replies=("The car died on the {road} {when}. The {cause}. [Two hours waiting for a tow.|Expensive.]",),
            reactions=SYMPATHY,
        ),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line)
        for line in (
            "The garage still hasn't fixed the car.",
            "Taking the bus everywhere while the car's in the garage.",
            "Got the car back, and the bill. Ouch.",
        )
    ]
    story = _Story(
        [beat],
        [
            _Draft(
                "temporal",
                c.ask(
                    "When did {X}'s car break down?",
                    "When was {X} stranded on the {road}?",
                    "When did {X}'s {cause} go?",
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
                c.ask("Which part failed in {X}'s car?", "What was wrong with {X}'s car?", X=X),
                values["cause"],
                (0,),
            ),
        ],
    )
    return _foreshadowed(
        c,
        story,
        (
            "The car's making a weird noise on the {road} again.",
            "The car's been [rattling|grumbling] all week, probably nothing.",
        ),
        values,
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
    values = {"partner": partner, "gift": gift}
    beat = _tell(
        c,
        _Telling(
            said=(
                "Got {partner} {gift} for our anniversary, it went down very well.",
                "Anniversary dinner was lovely, I gave {partner} {gift}.",
            ),
            asks=("What did you get {partner} for the anniversary?", "Did {partner} like the present?"),
            replies=("{gift}! [Went down very well.|Nailed it.]", "[Loved it!|Yes!] {gift}, [finally|] a good idea from me."),
            reactions=("That's so thoughtful!", "Okay you've set the bar very high.", "How many years now?"),
            more=("Seven! Time flies.", "Three, and still going strong."),
            ask_holds_answer=True,
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line) for line in ("Anniversary plans are stressing me out.", "We had the loveliest quiet evening at home.")
    ]
    return _Story(
        [beat],
        [
            _Draft("single-hop", f"What did {X} give {partner} for their anniversary?", gift, (0,)),
            _Draft(
                "single-hop",
                c.ask("Who did {X} celebrate an anniversary with?", "Who is {X}'s partner?", "Who is {X}'s other half?", X=X),
                partner,
                (0,),
            ),
        ],
    )


def _injury(c: _Context) -> _Story:
    sport = c.mention("sport", c.fresh(SPORTS))
    phrase, when = c.when()
    values = {"part": c.pick(("ankle", "wrist", "knee", "shoulder", "back")), "sport": sport, "when": phrase}
    beat = _tell(
        c,
        _Telling(
            said=(
                "Sprained my {part} playing {sport} {when}, so I'm hobbling around.",
                "I hurt my {part} at {sport} {when}, the physio says rest for a month.",
            ),
            asks=("Why are you limping?", "What happened to you? You look like you're in pain."),
            replies=("{sport}, {when}. Landed badly on my {part}. [Rest for a month.|So embarrassing.]",),
            leads=("You okay? You sounded rough earlier.", "How was your week?"),
            reactions=SYMPATHY,
            more=("I'll live. Bored already.", "Ice, pillows and bad TV."),
        ),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line, values)
        for line in (
            "Physio again today, ouch.",
            "Can't wait to be back playing.",
            "Doing my exercises every morning like a good patient.",
            "My {part} is still killing me.",
        )
    ]
    story = _Story(
        [beat],
        [
            _Draft(
                "temporal",
                c.ask(
                    "When did {X} hurt {p} {part}?",
                    "When did {X} get injured playing {sport}?",
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
                    "What was {X} playing when {s} hurt {p} {part}?",
                    "Which sport left {X} injured?",
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
        (
            "My {part} has been twinging at {sport} lately.",
            "Joined a {sport} league, [should be fun|what could go wrong].",
        ),
        values,
    )


def _habit(c: _Context) -> _Story:
    habit = c.pick(("smoking", "coffee", "sugar", "social media", "alcohol", "energy drinks"))
    beat = _tell(
        c,
        _Telling(
            said=(
                "Three weeks without {habit} now and honestly I feel great.",
                "I gave up {habit} at the start of the month. Awful week, then fine.",
            ),
            asks=("You seem different lately, in a good way. What changed?",),
            replies=("No more {habit}! [Three weeks now.|Cold turkey.]",),
            leads=("Any new year's resolutions that stuck?",),
            reactions=CHEERS + ("I could never.",),
        ),
        {"habit": habit},
    )
    c.echoes = [c.say(line) for line in ("Cravings were bad today, but I held on.", "Sleeping so much better lately.")]
    return _Story(
        [beat],
        [
            _Draft(
                "single-hop",
                c.ask(
                    "What has {X} given up?", "What has {X} cut out of {p} life recently?", X=c.owner.name, p=c.owner.possessive
                ),
                habit,
                (0,),
            )
        ],
    )


def _garden(c: _Context) -> _Story:
    plant = c.pick(("rose bushes", "tomato plants", "apple trees", "lavender plants", "sunflowers", "raspberry canes"))
    values = {"plant": plant, "count": c.rng.randint(3, 24)}
    beat = _tell(
        c,
        _Telling(
            said=(
                "Planted {count} {plant} along the back fence this weekend.",
                "The garden project continues: {count} {plant} in the ground today.",
            ),
            asks=("How many {plant} did you end up planting?",),
            replies=("{count}! [My back is destroyed.|All along the fence.]",),
            leads=("How's the garden?", "Did you get outside at all this weekend?"),
            reactions=("Green fingers!", "Your back must be killing you.", "It'll look amazing in summer."),
            ask_holds_answer=True,
        ),
        values,
    )
    X = c.owner.name
    c.echoes = [c.say(line) for line in ("Spent all Sunday weeding.", "Slugs have declared war on my garden.")]
    return _Story(
        [beat],
        [_Draft("single-hop", f"How many {plant} did {X} plant?", str(values["count"]), (0,))],
    )


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
    phrase, when = c.when()
    values = {"manager": manager, "project": c.pick(PROJECTS), "when": phrase}
    first = _tell(
        c,
        _Telling(
            said=(
                "My new manager started this week, {manager}. Seems sharp, used to run a team of forty.",
                "We've got a new boss at work, {manager}, and so far so good.",
                "{manager} is our new head of department. First meeting was surprisingly fun.",
            ),
            asks=("Did the new boss start yet?", "What's the new manager like?"),
            replies=("{manager}. [Seems sharp.|So far so good.|Hard to read.]",),
            leads=("How's work?", "Anything new at the office?"),
            reactions=(
                "New bosses are always a gamble.",
                "Fingers crossed they stay nice!",
                "That's a relief, the last one was awful.",
            ),
        ),
        values,
    )
    second = _tell(
        c,
        _Telling(
            said=(
                "{manager} put me in charge of the {project} {when}! Bit scary.",
                "{when} {manager} asked me to lead the {project}. Big vote of confidence.",
            ),
            asks=("How's it going with {manager}?", "Is {manager} still being nice?"),
            replies=("Really well, actually. Put me in charge of the {project} {when}!",),
            leads=("How's work going?", "Still enjoying the job?"),
            reactions=CHEERS + ("You'll smash it.",),
        ),
        values,
        when=when,
    )
    X = c.owner.name
    c.echoes = [
        c.say(line)
        for line in (
            "The new boss wants weekly reports now.",
            "Big meeting with my manager tomorrow, nervous.",
            "Work is busier than ever this month.",
        )
    ]
    story = _Story(
        [first, second],
        [
            _Draft("single-hop", c.ask("Who is {X}'s new manager?", "What is the name of {X}'s new boss?", X=X), manager, (0,)),
            _Draft("multi-hop", f"What did {X}'s manager put {c.owner.object} in charge of?", values["project"], (0, 1)),
            _Draft(
                "temporal",
                c.ask(
                    "When was {X} given the {project} to lead?",
                    "When did {X}'s boss hand {o} the {project}?",
                    "When did {X} get put in charge at work?",
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
        (
            "Our old boss is leaving, [no idea who's next|rumours everywhere].",
            "Interviews for our new head of department this week, [fingers crossed|I'm nervous].",
        ),
        values,
    )


# --- What a person is like: said in several sessions, never named, asked about by inference ---------


@dataclass(frozen=True)
class _Trait:
    answer: str  # {s}, {o}: the person's pronouns
    remarks: tuple[str, ...]  # what the person says in passing, one a turn
    more: tuple[str, ...]  # what may follow a remark, on the same subject
    questions: tuple[str, ...]  # what needs the inference; the first the most concrete


TRAITS = (
    _Trait(
        "likely yes: hiking, wild camping, nights outside",
        (
            "We pitched the tent by the lake and listened to owls [all night|till midnight].",
            "Bought proper boots for the ridge walk [next month|in May], my old ones [leak|fell apart].",
            "Slept under the stars on the moor [on Saturday|last weekend], freezing but magical.",
            "Did the whole coastal path with a map and a flask, [twenty|eighteen] miles.",
            "Spent two nights in a bothy with no signal, [bliss|heaven].",
            "Up before sunrise to catch the mist on the summit, worth every blister.",
        ),
        (
            "Fresh air, a flask of tea, nobody else for miles.",
            "My legs are wrecked but my head is clear.",
            "Phone off, map out, perfect.",
            "Cooked noodles on the little stove and watched the sky go orange.",
            "Muddy boots drying by the door again.",
        ),
        ("Would {X} enjoy a camping trip?", "Would {X} like a holiday in a national park?", "Is {X} an outdoorsy person?"),
    ),
    _Trait(
        "music: choir, songwriting, open mics",
        (
            "Our choir sang at the cathedral on Sunday, I had goosebumps.",
            "I've had the same four chords stuck in my head all week, writing something new.",
            "Went to the open mic and [played two songs|did a little set], hands shaking the whole time.",
            "Tuned up the old upright in my living room, finally sounds right.",
            "Spent the evening arranging harmonies for the choir.",
        ),
        (
            "The altos nailed the high bit for once.",
            "Recorded a rough demo on my phone.",
            "I could do that every night.",
            "Someone in the crowd sang along, I nearly cried.",
        ),
        (
            "Would {X} enjoy a karaoke night?",
            "What creative outlet does {X} probably have?",
            "What kind of present would {X} appreciate?",
        ),
    ),
    _Trait(
        "kind and caring: {s} looks after people around {o}",
        (
            "Did the shopping for my elderly neighbour again, she [tells the best stories|insists on paying me in biscuits].",
            "Sat with a friend at A&E till 2am, someone had to.",
            "Drove my colleague to the airport at 5am, what are friends for.",
            "Organised a meal rota for the family down the road, they've had a rough month.",
            "Took soup round to Mrs Patel, she's been poorly all week.",
        ),
        (
            "It's nothing really, they'd do the same for me.",
            "She looked so relieved when I turned up.",
            "I just hate the thought of anyone being on their own with it.",
        ),
        (
            "Would {X} be a good person to call in a crisis?",
            "What kind of person is {X}?",
            "How would others describe {X}'s character?",
        ),
    ),
    _Trait(
        "a big reader: novels, library sales, late nights with a book",
        (
            "Finished three novels on the train this week.",
            "The library sale had old hardbacks for a pound each, I carried home twelve.",
            "Stayed up till two for the last chapter, no regrets.",
            "My to-be-read pile is taller than the lamp now.",
            "Joined a second book club. Yes, a second one.",
        ),
        (
            "The twist in the middle made me gasp on the bus.",
            "I've run out of shelf space again.",
            "Paperbacks everywhere, my flat is a library.",
        ),
        (
            "Would {X} enjoy a literary festival?",
            "What would make a good present for {X}?",
            "How does {X} likely spend a quiet evening?",
        ),
    ),
    _Trait(
        "very competitive: leagues, finals, personal bests",
        (
            "Won the club doubles final on Sunday, still buzzing.",
            "Training five mornings a week for the regional league.",
            "Lost the semi by one point and I'm still furious.",
            "Beat my personal best at the pool by four seconds.",
            "Our quiz team came second and I demanded a recount.",
        ),
        (
            "Second place is just first loser, as my coach says.",
            "I replayed every point in my head all night.",
            "Next season I'm going to crush them.",
        ),
        ("How competitive is {X}?", "Would {X} take a friendly game lightly?", "What is {X} like when playing games?"),
    ),
    _Trait(
        "arts and crafts: painting, pottery, sketching",
        (
            "Spent Sunday at the pottery wheel, made three wonky bowls.",
            "Painted the view from my window, the light was perfect at six.",
            "Sketching on the bus is my new thing.",
            "Entered two watercolours in the village show.",
            "Bought a new set of brushes, the good ones.",
        ),
        (
            "Clay under my nails for days.",
            "I lose track of time completely when I'm doing it.",
            "Mixing colours is my favourite bit.",
        ),
        ("Would {X} enjoy an art class?", "What might {X} do on a free afternoon?", "What kind of gift would suit {X}?"),
    ),
    _Trait(
        "a keen cook: fresh pasta, markets, fermenting, tasting menus",
        (
            "Made fresh pasta from scratch, flour everywhere.",
            "Spent Saturday at the market picking out cheeses.",
            "I've been fermenting my own kimchi, the fridge smells interesting.",
            "Tried a twelve-course tasting menu, worth every penny.",
            "Baked sourdough again, the starter has a name now.",
        ),
        (
            "The kitchen looks like a bomb went off.",
            "Next up: homemade ravioli.",
            "Spent more on ingredients than I'd like to admit.",
        ),
        ("Would {X} enjoy a cooking class?", "What is {X} passionate about?", "What kind of holiday activity would {X} love?"),
    ),
    _Trait(
        "into technology and gaming",
        (
            "Built my own PC over the weekend, only one screw left over.",
            "Stayed up way too late on the new strategy game.",
            "Wrote a little script that waters my plants.",
            "Fixed my dad's router over the phone, again.",
            "Our raid finally beat the last boss at 3am.",
        ),
        (
            "The graphics card alone cost a fortune.",
            "Just one more level, I said, at midnight.",
            "I've got three monitors now, don't judge.",
        ),
        (
            "Would {X} be a good person to ask for help with a broken laptop?",
            "What does {X} probably do in {p} spare time?",
            "What kind of present would {X} like?",
        ),
    ),
    _Trait(
        "an animal lover: fostering, rescues, dog walking",
        (
            "Fostering two kittens for the shelter this month.",
            "Stopped the car to help a hedgehog cross the road.",
            "Signed up to walk dogs at the rescue on weekends.",
            "Spent my lunch break feeding the ducks, obviously.",
            "Nursed a baby pigeon back to health on my balcony.",
        ),
        (
            "They're so tiny and so loud.",
            "I'd take them all home if I could.",
            "Happy as anything, covered in muck.",
        ),
        ("Would {X} consider adopting a pet?", "What cause would {X} likely donate to?", "What is {X} like around creatures?"),
    ),
    _Trait(
        "calm and mindful: meditation, yoga, retreats",
        (
            "Did a ten-day silent retreat, my head has never felt so quiet.",
            "Morning meditation is non-negotiable for me now.",
            "Yoga at sunrise on the beach, can't beat it.",
            "Breathing exercises got me through the whole meeting.",
            "No phone after nine, my new rule. Sleeping like a baby.",
        ),
        (
            "Twenty minutes of sitting still changes my whole day.",
            "The teacher said to notice my breath, and I did.",
            "I feel lighter, somehow.",
        ),
        ("Would {X} enjoy a wellness weekend?", "What might help {X} relax?", "How does {X} deal with stress?"),
    ),
    _Trait(
        "cares about the environment: cycling, composting, repairing",
        (
            "Sold the car, it's the bike or the bus for me now.",
            "Started composting, the worms are thriving.",
            "Repair café on Saturday, fixed a lamp instead of binning it.",
            "We've gone mostly plant-based at home.",
            "Took the train all the way to Vienna instead of flying.",
        ),
        (
            "Less waste, less stuff, less guilt.",
            "Every little bit counts, right?",
            "Our bin hardly fills up any more.",
        ),
        (
            "Would {X} likely buy a big petrol car?",
            "What might {X}'s views on climate change be?",
            "What values does {X} seem to care about?",
        ),
    ),
    _Trait(
        "family comes first",
        (
            "Sunday lunch at mum's with all fourteen cousins, chaos.",
            "Took my nephews to the zoo, I'm exhausted.",
            "Grandma taught me her dumpling recipe at last.",
            "Drove four hours to see my dad for his birthday, worth it.",
            "The whole clan is coming for Christmas, eighteen of us.",
        ),
        (
            "Loud, messy, and exactly where I want to be.",
            "My aunt cried twice, as usual.",
            "We talked until midnight around the kitchen table.",
        ),
        ("Is {X} close to {p} relatives?", "What matters most to {X}?", "How would {X} likely spend a long weekend off?"),
    ),
    _Trait(
        "adventurous, a risk-taker",
        (
            "Jumped out of a plane at 12,000 feet [on Saturday|last weekend].",
            "Booked a one-way ticket, no plan, we'll see.",
            "Learning to scuba dive, first open water dive next month.",
            "Went white-water rafting and fell in twice.",
            "Signed up for a motorbike trip across the Andes.",
        ),
        (
            "My heart was going a million miles an hour.",
            "Terrified the whole time and I loved it.",
            "Mum doesn't know yet, don't tell her.",
        ),
        ("Would {X} try bungee jumping?", "Is {X} a cautious person?", "What kind of trip would appeal to {X}?"),
    ),
)
# (the field a person works in, things said about work that never name it, what may follow them)
OCCUPATIONS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "healthcare (a nurse)",
        (
            "Twelve-hour shift on the ward, three admissions in the last hour.",
            "A patient's daughter brought us a tin of chocolates today.",
            "Night shifts again this week, my body clock has given up.",
            "Had to explain the discharge paperwork four times today.",
            "Triage was chaos, two ambulances at once.",
        ),
        ("My feet are done.", "The doctors were rushed off their feet too.", "I still love it, mostly."),
    ),
    (
        "education (a primary school teacher)",
        (
            "Marking thirty essays on volcanoes tonight.",
            "Parents' evening ran until eight, my voice is gone.",
            "One of my Year Fours cried because the class hamster escaped.",
            "Playground duty in the rain, again.",
            "Nativity rehearsals. Enough said.",
        ),
        ("The little ones were feral after lunch.", "Thirty small people, one of me.", "Half term cannot come soon enough."),
    ),
    (
        "software (a developer)",
        (
            "Spent all day chasing a bug that turned out to be a typo.",
            "Our release went out at midnight, nothing caught fire.",
            "Code review marathon today, my eyes are square.",
            "The servers went down during the demo. Of course.",
            "Pair programming with the new hire, she's brilliant.",
        ),
        ("Tests are green, I can sleep.", "Three standups and no actual work.", "Deploy Friday? Never again."),
    ),
    (
        "restaurants (a chef)",
        (
            "Service was mental, a hundred and twenty covers.",
            "Burned my arm on the grill again.",
            "On the pass all night, my feet are done.",
            "Prepped forty kilos of onions this morning.",
            "The health inspector turned up mid-lunch rush.",
        ),
        (
            "The new menu goes live Friday.",
            "Tickets everywhere, pans everywhere.",
            "Staff meal was the best thing I ate all week.",
        ),
    ),
    (
        "law (a solicitor)",
        (
            "Court ran late, the judge was in a mood.",
            "Drafting a contract that's eighty pages long.",
            "My client didn't show up for the hearing.",
            "Billable hours, billable hours, billable hours.",
            "Settled the case on the courtroom steps, very dramatic.",
        ),
        ("The other side's barrister was smug about it.", "Paperwork up to my ears.", "Precedent is on our side, at least."),
    ),
    (
        "architecture",
        (
            "The planning office rejected our drawings again.",
            "Site visit in the mud, the foundations are finally poured.",
            "Redrawing the floor plans for the third time.",
            "The client wants the staircase moved. Again.",
            "Model-making until midnight for the competition.",
        ),
        ("Concrete is a lifestyle.", "The builders think I'm fussy.", "I dream in elevations now."),
    ),
    (
        "veterinary medicine (a vet)",
        (
            "Stitched up a labrador that lost a fight with a fence.",
            "Three spays before lunch.",
            "A farmer called me out at 3am for a calving.",
            "Had to give a very angry parrot its injections.",
            "Surgery ran over, the poor greyhound is fine though.",
        ),
        (
            "The owners were more nervous than the patient.",
            "Scrubs covered in fur again.",
            "The waiting room was a zoo, literally.",
        ),
    ),
    (
        "finance (an accountant)",
        (
            "Year-end close, I've seen too many spreadsheets.",
            "The audit starts Monday, wish me luck.",
            "Tax return season, I've forgotten what sunlight looks like.",
            "Found a rounding error worth forty thousand. Fun day.",
            "Reconciling ledgers until my eyes crossed.",
        ),
        ("The numbers finally balanced at nine.", "Invoices, invoices, invoices.", "Quarter end is coming for us all."),
    ),
    (
        "journalism",
        (
            "My piece made the front page!",
            "Deadline at six, interviewed the mayor at five.",
            "The editor cut my article in half again.",
            "Chasing a source who won't call back.",
            "Spent the day at the council meeting taking notes.",
        ),
        ("Filed it with two minutes to spare.", "My byline, in print, still a thrill.", "The subs changed my headline again."),
    ),
    (
        "electrical work (an electrician)",
        (
            "Rewired a whole kitchen today.",
            "Someone's DIY fuse box nearly gave me a heart attack.",
            "Three call-outs for tripped breakers before lunch.",
            "Fitted forty sockets in the new flats.",
            "Up a ladder in the rain fixing street lights.",
        ),
        ("The van is a mess of cable.", "Safety first, always.", "Customers always offer tea, bless them."),
    ),
)
OCCUPATION_QUESTIONS = (
    "What might {X}'s job be related to?",
    "In what field does {X} probably work?",
    "What does {X} most likely do for a living?",
)
TRAIT_LEADS = (
    "How was your weekend?",
    "What have you been up to?",
    "How's your week going?",
    "Anything fun lately?",
    "How was work?",
    "What did you get up to?",
)
TRAIT_REACTIONS = (
    "Ha, of course you did.",
    "That is so you.",
    "Love that.",
    "Sounds intense!",
    "Respect.",
    "Oh wow.",
    "I'd never have the energy.",
    "Haha, classic you.",
)


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

SMALL_TALK: tuple[tuple[str, ...], ...] = (
    ("Did you watch {show} last night?", "Not yet, no spoilers please!"),
    ("I'm hooked on {show}, it's so bad it's good.", "Haha I know exactly the one you mean."),
    ("The weather has been so grim this week.", "Tell me about it, I haven't seen the sun since {weekday}."),
    ("It's finally warm enough to sit outside!", "Enjoy it, it'll be raining again by {weekday}."),
    (
        "My neighbour's {species} was making a racket at five in the morning again.",
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
    ("A friend of mine just came back from {place}.", "Oh, how was it?", "She won't stop talking about it."),
    ("There's a documentary about {place} on tonight.", "Ooh, I'll watch it too."),
    ("Is {dish} hard to make, do you think?", "No idea, I just eat it."),
    ("I walked past a {species} in a tiny jumper today.", "Stop, that's adorable."),
    ("My neighbour is training for the {city} {race}.", "Rather them than me."),
    ("Do you know any good places in {city}?", "A few, I'll send you a list."),
    ("The office fridge smells of {food} again.", "Someone has to confess eventually."),
    ("My nephew wants to learn the {instrument}.", "Brave parents."),
    ("They're showing old {sport} matches on TV all week.", "My evenings are sorted then."),
)
GREETINGS = (
    ("Hey {you}! How's your week been?", "Hi! Busy but good. Yours?"),
    ("{you}! Long time no talk.", "I know, life has been a lot. How are you?"),
    ("Morning! Got a minute to catch up?", "Always, coffee's in hand."),
    ("Hiya, how was the weekend?", "Too short, as usual!"),
    ("Hey hey, what's new?", "Oh, where do I start..."),
    ("Hi {you}, are you around?", "Yes! Just got home. What's up?"),
    ("Evening! Survived the week?", "Barely. You?"),
    ("{you}!! I've missed you.", "Same! It's been ages."),
)
FAREWELLS = (
    ("Okay, I have to run, talk soon!", "Bye! Say hi to everyone for me."),
    ("Right, dinner's burning. Later!", "Haha go, go. Talk soon."),
    ("Let's catch up again next week?", "Definitely. Take care!"),
    ("I should sleep. Night!", "Night night!"),
    ("My train's here, speak soon!", "Safe travels!"),
)


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


HANDOVERS = ("What about you, anything new?", "And you? What's going on with you?", "How about you?", "Enough about me. You?")
ACKNOWLEDGEMENTS = ("Haha, true.", "Ha, fair enough.", "Mm, I know.", "Right?", "Ha, yes.", "Totally.")

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
