#!/usr/bin/env python3
"""A synthetic year of one owner talking to their assistant, for `scripts/bench recall --set year`.

365 daily sessions (1 January to 31 December 2025), each a session directory of one epoch laid
out as loopd writes them (a head, then the records with their times: the day's conversation
starts in the morning or evening, a few minutes a message). The owner tells the assistant
facts about their life and projects (eval/year_facts.py, eval/year_life.py): friends, dates,
where things are, plans that change, things done on a day; each telling is answered with a
short acknowledgement. Around them, the everyday talk that makes up most of a history
(`filler`): work on the same projects, requests for help, small talk naming the same people,
cities and things, each answered at some length. The tellings and questions are the same at
every size; only the everyday talk grows, so a smaller size is the same year with less said.

Deterministic: a fixed seed, no network, no model. Writes under OUT:

  sessions/day-NNN/epoch-000000.head.json, .jsonl
  questions.jsonl   {"question", "category", "evidence": [record texts]}: asked of every log

Usage: year.py OUT [RECORDS]   (RECORDS, the records to write in all: 30000 unless given)
"""
import json, os, random, sys
from datetime import datetime, timedelta, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from year_facts import CITIES, PEOPLE, PROJECTS, pick  # noqa: E402
from year_life import all_facts  # noqa: E402

SEED = 2025
DAYS = 365
START = datetime(2025, 1, 1, tzinfo=timezone.utc)

ACKS = ["Noted.", "Got it, I'll remember that.", "Okay, saved.", "Thanks, noted.", "Understood.",
        "All right, I'll keep that in mind.", "Good to know.", "Written down.", "Got it.", "Okay!",
        "I'll remember.", "Thanks for letting me know."]
OPENERS = ["", "", "", "Oh, ", "Quick one: ", "By the way, ", "Before I forget, ", "Random thought: ",
           "Okay so ", "Morning! ", "Hmm, ", "Right, ", "Also, ", "Update: "]
CLOSERS = ["", "", "", " Anyway.", " Just saying.", " Long day.", " :)", " Ugh.", " Not urgent.",
           " More later.", " Thoughts?"]

WORK = [
    "spent the morning refactoring the sync code in {p}",
    "fighting with CSS grid on {p} again",
    "wrote a bunch of tests for the importer in {p}",
    "the build for {p} is broken and I don't know why",
    "finally got the login flow working on {p}",
    "I keep getting a null pointer somewhere in {p}",
    "did a code review of {n}'s branch for {p}",
    "profiled {p}, the slow part is the JSON parsing",
    "rewrote the README for {p}",
    "thinking about dropping a feature from {p} to save time",
    "pair-programmed with {n} on {p} for two hours",
    "moved {p}'s issue tracker to a kanban board",
    "migrated the {p} database, nothing exploded",
    "the deploy of {p} took forty minutes, need to speed that up",
    "{n} found a bug in {p} that's been there for months",
    "sketched the settings screen for {p} on paper",
    "backed up everything for {p} before the upgrade",
    "renamed half the modules in {p}, feels cleaner",
    "the dependency update for {p} broke three things",
    "wrote the changelog for the next {p} release",
]
HELP = [
    ("Can you explain what a mutex is, in simple terms?",
     "A mutex is a lock that lets only one thread at a time into a piece of code; the others wait until it is released."),
    ("Give me a quick recipe for lentil soup.",
     "Soften an onion, carrot and garlic in oil, add red lentils, stock, cumin and a tin of tomatoes, simmer 25 minutes, blend half."),
    ("How do I say 'see you tomorrow' in Spanish?", "'Hasta mañana' is the usual way."),
    ("What's a good name for a function that merges two sorted lists?", "merge_sorted or merge_ordered both read well."),
    ("How long should I rest between interval sprints?", "For short sprints, about twice the sprint's length; for longer ones, roughly equal."),
    ("Can you draft a polite email asking the landlord about the heating?",
     "Dear landlord, the heating has not worked properly since Monday; could someone take a look this week? Thanks."),
    ("What's the difference between a list and a tuple in Python?", "A list can change after it is made, a tuple cannot; tuples can be dict keys."),
    ("Suggest a board game for four people who don't like long rules.", "Try Codenames, Azul or Just One: minutes to learn."),
    ("How do I get red wine out of a carpet?", "Blot, then dab with cold water and a little washing-up liquid; salt or baking soda can draw the rest out."),
    ("What does HTTP 429 mean?", "Too Many Requests: the server is rate limiting you; wait and retry with backoff."),
    ("How many grams of pasta per person?", "About 80 to 100 grams of dried pasta for a main course."),
    ("Explain git rebase like I'm five.", "You pick up your changes and put them back down on top of the newest version, as if you had started from there."),
    ("Any tips for falling asleep faster?", "A fixed wake time, no screens for the last hour, a cool dark room, and getting up if you can't sleep."),
    ("What's a good stretch for tight hamstrings?", "A standing forward fold with soft knees, or lying with a strap around the foot, 30 seconds each side."),
    ("Write a haiku about Mondays.", "Grey alarm again / coffee steams against the dark / the week clears its throat"),
    ("How do I centre a div?", "On the parent: display flex, justify-content center, align-items center."),
    ("What's the capital of Mongolia?", "Ulaanbaatar."),
    ("How often should I water a cactus?", "Every two to three weeks in summer, once a month or less in winter."),
    ("Convert 180 pounds to kilos.", "About 81.6 kg."),
    ("Summarise the plot of Hamlet in two lines.", "A prince learns his uncle murdered his father and took the throne; his hesitant revenge ends with nearly everyone dead."),
    ("What's a regex for an email address, roughly?", "Roughly ^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$ : good enough for a form, not a validator."),
    ("Is it better to rent or buy an electric drill?", "If you need it more than twice a year, a basic cordless drill pays for itself."),
    ("How do I make cold brew coffee?", "Coarse grounds and cold water at about 1 to 8, steep 12 to 18 hours in the fridge, strain."),
    ("Give me three ideas for a rainy Sunday.", "A long brunch, a museum you've never visited, or a film marathon with a theme."),
    ("What's the SQL to count rows per day?", "SELECT date(created), count(*) FROM t GROUP BY date(created) ORDER BY 1;"),
]
# What the owner adds to a request for help.
ASIDES = ["", "", "", " Asking for {n}.", " It's for {p}.", " Need it for tonight.", " Keep it short.",
          " {n} asked me and I had no idea.", " Came up while working on {p}.", " No rush.",
          " Settling an argument with {n}.", " Sorry if I asked before."]
LIFE = [
    "had lunch with {n} at the noodle place, nice catching up",
    "the weather in {c} looks grim this week according to {n}",
    "watched a documentary about {c}, want to visit someday",
    "{n} sent me a ridiculous video of a goat",
    "cleaned the whole kitchen, it took forever",
    "the neighbours are drilling again",
    "made pancakes for breakfast, nailed the flip",
    "long walk along the river after work",
    "read an article about housing prices in {c}",
    "{n} is thinking about getting a cat",
    "the train was cancelled so I worked from home",
    "bought way too many groceries again",
    "my back is stiff from sitting all day",
    "caught a cold, staying in with tea",
    "tried a new bakery, the cardamom buns are unreal",
    "{n} and I argued about films for an hour",
    "spent the evening sorting old photos",
    "the washing machine is making a weird noise",
    "slept badly, too warm",
    "went for a swim, the pool was packed",
    "listened to a podcast about the history of {c}",
    "{n} recommended a new podcast about space",
    "the dog chewed a shoe, not mine luckily",
    "cooked a big curry for the week",
    "the bins didn't get collected again",
    "saw a fox in the garden this morning",
    "{n} is back from a trip to {c}",
    "thinking about repainting the hallway",
    "lost an hour on my phone, need to stop that",
    "sunset was gorgeous tonight",
]
LIFE_REPLIES = [
    "That sounds like a good day.", "Oh no, I hope it gets better.", "Ha, sounds about right.",
    "Nice! Anything you'd like me to keep track of from that?", "That's lovely to hear.",
    "Sounds tiring. Want me to remind you to take a break later?", "Fair enough.",
    "Good to hear from you. Anything else on your mind?", "Classic. Hope the rest of the day is calmer.",
]
WORK_REPLIES = [
    "Sounds like progress. Want me to note anything for tomorrow?",
    "That's the annoying kind of problem. Try bisecting the last few changes?",
    "Nice work. Shall I keep a list of what's left?",
    "Progress is progress. If it helps, write down where you stopped.",
    "Ugh, that's frustrating. A fresh look in the morning often helps.",
    "Good call. Smaller steps make the next part easier.",
]


# First words that keep their capital after an opener ("Oh, I ..."), beside names.
PROPER = {"I", "I'm", "I've", "I'll", "Spanish", "Otis", "Lofoten", "MOT", "Wet", "Larkspur", "Anders",
          "Ruth", "Fernwood", "Christmas", "Heron", "Pebblefall"}


def proper(text):
    first = text.split()[0].rstrip(":,!").removesuffix("'s")
    return first in PROPER or first in PEOPLE or first in PROJECTS


def dated(day, minute):
    return (START + timedelta(days=day, minutes=minute)).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def filler(rng, seen):
    """One exchange of everyday talk: (owner text, reply), the owner's text not said before."""
    for _ in range(100):
        kind = rng.random()
        if kind < 0.4:
            body = pick(rng, WORK).format(p=pick(rng, list(PROJECTS)), n=pick(rng, PEOPLE))
            reply = pick(rng, WORK_REPLIES)
        elif kind < 0.7:
            body = pick(rng, LIFE).format(n=pick(rng, PEOPLE), c=pick(rng, CITIES))
            reply = pick(rng, LIFE_REPLIES)
        else:
            q, reply = pick(rng, HELP)
            text = pick(rng, OPENERS) + q + pick(rng, ASIDES).format(n=pick(rng, PEOPLE), p=pick(rng, list(PROJECTS)))
            if text not in seen:
                seen.add(text)
                return text, reply
            continue
        opener = pick(rng, OPENERS)
        body = body[0].upper() + body[1:] if opener in ("", "Morning! ", "Update: ") else body
        text = f"{opener}{body}.{pick(rng, CLOSERS)}"
        if text not in seen:
            seen.add(text)
            return text, reply
    # A long year of small talk runs out of fresh combinations: a day's note makes it new.
    text = f"{text} (note {len(seen)})"
    seen.add(text)
    return text, reply


def main():
    out = sys.argv[1]
    records = int(sys.argv[2]) if len(sys.argv) > 2 else 30000
    rng = random.Random(SEED)
    people, cities = list(PEOPLE), list(CITIES)
    tellings, questions = all_facts(rng, people, cities)
    seen = set()
    by_day = {}
    for day, text in tellings:
        if text in seen:
            sys.exit(f"year.py: a telling said twice: {text!r}")
        seen.add(text)
        by_day.setdefault(day, []).append(text)
    # The everyday talk: its own generator, so the facts are the same at every size.
    talk = random.Random(SEED * 1000 + records)
    exchanges = max(0, records // 2 - len(tellings))
    per_day = [0] * DAYS
    for _ in range(exchanges):
        per_day[talk.randrange(DAYS)] += 1
    for day in range(DAYS):
        d = os.path.join(out, "sessions", f"day-{day + 1:03}")
        os.makedirs(d)
        told = by_day.get(day, [])
        lines = [("tell", t) for t in told] + [("talk", None)] * per_day[day]
        talk.shuffle(lines)
        # Mornings or evenings, a few minutes a message.
        minute = talk.choice([7 * 60, 8 * 60, 12 * 60, 18 * 60, 20 * 60]) + talk.randrange(60)
        head = {
            "epoch": 0, "started": dated(day, minute),
            "system": "You are a helpful assistant for one owner.", "tools": [], "carry": None,
            "carry_label": {"class": "private", "untrusted": False},
            "reason": "start", "summary_source": "model",
        }
        with open(os.path.join(d, "epoch-000000.head.json"), "w") as f:
            json.dump(head, f)
        with open(os.path.join(d, "epoch-000000.jsonl"), "w") as f:
            for kind, text in lines:
                if kind == "tell":
                    opener = talk.choice(["", "", "", "Oh, ", "By the way, ", "For the record: ", "Quick note: "])
                    said = opener + (text if proper(text) or not opener else text[0].lower() + text[1:])
                    reply = talk.choice(ACKS)
                    # The evidence is what was logged.
                    for q in questions:
                        q[2][:] = [said if e == text else e for e in q[2]]
                else:
                    said, reply = filler(talk, seen)
                minute += 1 + talk.randrange(4)
                f.write(json.dumps({"type": "user", "time": dated(day, minute), "content": said, "origin": "owner"},
                                   ensure_ascii=False) + "\n")
                minute += 1
                f.write(json.dumps({"type": "assistant", "time": dated(day, minute), "content": reply,
                                    "tool_calls": []}, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "questions.jsonl"), "w") as f:
        for category, q, evidence in questions:
            f.write(json.dumps({"question": q, "category": category, "evidence": evidence},
                               ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
