"""The facts of the synthetic year (eval/year.py): what the owner tells their assistant about
their life and projects, when, how it is said, and the questions asked of it at the year's end.

Each fact is told on a day of the year in one of several phrasings; a question about it is
worded from a separate list, with other words than the telling's (a real question is not a
copy of what was said). Every kind returns `(tellings, questions)`:

  tellings   [(day, text)]: the owner's message, logged that day (day 0 is 1 January)
  questions  [(category, question, [the tellings' texts that answer it])]

Categories: "single fact" (told once), "update" (told, then changed: only the latest telling
answers "what is it now"), "date" (something done on a day: "when did I ..."; the telling is
the evidence, its date the answer) and "multi-message" (the answer is spread over several
tellings; all of them are the evidence).
"""

PEOPLE = [
    "Priya", "Tomasz", "Imogen", "Kwame", "Lucía", "Declan", "Mei", "Oskar", "Farah", "Benedikt",
    "Aoife", "Rafael", "Yuki", "Hamish", "Noor", "Stellan", "Ines", "Callum", "Zainab", "Jonas",
    "Bronwen", "Mateo", "Saoirse", "Emeka", "Greta", "Anselm", "Thandiwe", "Niamh", "Viktor", "Leilani",
]
CITIES = [
    "Glasgow", "Lyon", "Porto", "Utrecht", "Gdańsk", "Bologna", "Ghent", "Tallinn", "Valencia",
    "Cork", "Leipzig", "Bergen", "Brno", "Nantes", "Aarhus", "Seville", "Ljubljana", "Graz",
]
COMPANIES = [
    "Fernwood Analytics", "Kestrel Logistics", "Bramble & Co", "Northlight Games", "Copperleaf Health",
    "Quayside Media", "Halden Robotics", "Saltmarsh Energy", "Pinecrest Insurance", "Larkspur Labs",
    "Ironbridge Consulting", "Mossgiel Foods", "Tidewell Bank", "Cobalt Ferries", "Wrenfield Studios",
]
JOBS = [
    "paediatric nurse", "quantity surveyor", "sound engineer", "primary school teacher", "data analyst",
    "pastry chef", "structural engineer", "physiotherapist", "translator", "airline pilot",
    "veterinary surgeon", "urban planner", "tattoo artist", "patent lawyer", "museum curator",
]
PROJECTS = {
    # name: what it is (as the owner would say it)
    "Heron": "the bird-counting app",
    "Ledgerly": "the household budgeting tool",
    "Lantern": "my static blog engine",
    "Tidewater": "the kayak club's website",
    "Marigold": "the garden planner",
    "Basalt": "the home server rebuild",
    "Pebblefall": "the board game I'm designing",
    "Quillon": "the novel draft",
}
STACKS = ["Django with Postgres", "a Rust backend on Axum", "Elixir and Phoenix", "plain Go with SQLite",
          "Flask and Redis", "Kotlin with Ktor", "Node and Fastify", "Svelte on the front and FastAPI"]
DESIGN_ROLES = ["the logo and colour scheme", "the illustrations", "the user testing", "the database design",
                "the copy editing", "the artwork for the cards", "the networking setup", "the sound effects"]


def _day(rng, lo, hi):
    return rng.randint(lo, hi)


def _date(day):
    import datetime
    d = datetime.date(2025, 1, 1) + datetime.timedelta(days=day)
    return f"{d.day} {d.strftime('%B')}"


def pick(rng, xs):
    return xs[rng.randrange(len(xs))]


# --- single facts -------------------------------------------------------------------------------

def friends_cities(rng, people, cities):
    """Where friends live; some move during the year (an update), and a few cities hold several
    friends (a multi-message question: who do I know in X)."""
    tell = [
        "{n} lives in {c}, I keep forgetting that.",
        "Turns out {n} has been living in {c} for a couple of years now.",
        "{n} is based in {c}, so visits are a bit of a trek.",
        "Caught up with {n} on the phone, still settled in {c} and loving it.",
        "{n} has a flat in {c}, right by the old harbour apparently.",
    ]
    moved = [
        "Big news from {n}: packed up and moved to {c} last week.",
        "{n} has relocated to {c} for good, left the old place behind.",
        "{n} just messaged, the move to {c} is done and the new flat is lovely.",
    ]
    ask = [
        "Where does {n} live?",
        "Which city is {n} in?",
        "Remind me where {n} is based?",
        "What town did {n} settle in?",
    ]
    ask_now = [
        "Where does {n} live now?",
        "Which city is {n} in these days?",
        "Where did {n} end up moving?",
    ]
    out_t, out_q, by_city = [], [], {}
    for i, n in enumerate(people):
        c = cities[i % len(cities)]
        t = pick(rng, tell).format(n=n, c=c)
        out_t.append((_day(rng, 3, 200), t))
        if i % 3 == 2:  # moves later in the year
            c2 = cities[(i * 7 + 3) % len(cities)]
            if c2 == c:
                c2 = cities[(i + 5) % len(cities)]
            t2 = pick(rng, moved).format(n=n, c=c2)
            out_t.append((_day(rng, 220, 350), t2))
            out_q.append(("update", pick(rng, ask_now).format(n=n), [t2]))
            by_city.setdefault(c2, []).append(t2)
        else:
            out_q.append(("single fact", pick(rng, ask).format(n=n), [t]))
            by_city.setdefault(c, []).append(t)
    who = ["Who do I know in {c}?", "Which of my friends live in {c}?", "Is there anyone I know in {c}?"]
    for c, ts in sorted(by_city.items()):
        if len(ts) >= 2:
            out_q.append(("multi-message", pick(rng, who).format(c=c), ts))
    return out_t, out_q


def birthdays(rng, people):
    tell = [
        "{n}'s birthday is on {d}, put it somewhere I'll see it.",
        "Note to self: {n} was born on {d}.",
        "{n} turns {a} on {d}, we should do something.",
        "Don't let me miss {n}'s big day again, it's {d}.",
    ]
    ask = ["When is {n}'s birthday?", "What day was {n} born?", "When should I send {n} a card?",
           "When do I need to celebrate {n}?"]
    ts, qs = [], []
    for n in people:
        t = pick(rng, tell).format(n=n, d=_date(rng.randint(0, 364)), a=rng.randint(25, 60))
        ts.append((_day(rng, 0, 330), t))
        qs.append(("single fact", pick(rng, ask).format(n=n), [t]))
    return ts, qs


def jobs(rng, people):
    tell = [
        "{n} just started as a {j} at {c}.",
        "Learned today that {n} works at {c}, as a {j} no less.",
        "{n} has been a {j} for years; currently with {c}.",
        "{n} got the {j} position at {c}, so proud.",
    ]
    ask = ["What does {n} do for a living?", "Where is {n} employed?", "What's {n}'s line of work?",
           "Who does {n} work for?"]
    ts, qs = [], []
    for i, n in enumerate(people):
        # Not the owner's own employers (eval/year_life.py): those are asked about.
        theirs = [c for c in COMPANIES if c not in ("Fernwood Analytics", "Larkspur Labs")]
        t = pick(rng, tell).format(n=n, j=JOBS[i % len(JOBS)], c=theirs[(i * 3) % len(theirs)])
        ts.append((_day(rng, 0, 340), t))
        qs.append(("single fact", pick(rng, ask).format(n=n), [t]))
    return ts, qs


def projects(rng, helpers):
    """A stack and a helper per project (single facts, and together a multi-message question),
    and a deadline that moves (an update)."""
    stack_tell = [
        "For {p} I'm going with {s}, decided after a lot of back and forth.",
        "Settled it: {p} will be {s}.",
        "{p} is getting built on {s}, final answer.",
    ]
    stack_ask = ["Which tech did I pick for {p}?", "What's {p} built with?", "What framework is {p} using?"]
    help_tell = [
        "{n} offered to do {r} for {p}, which is a relief.",
        "{n} is taking over {r} on {p}.",
        "Good news, {n} will handle {r} for {p}.",
    ]
    help_ask = ["Who's helping me with {p}?", "Who did I get on board for {p}?", "Which friend is pitching in on {p}?"]
    both_ask = ["Who is helping on {p} and what is it built with?",
                "Give me the rundown of {p}: tech and who's involved."]
    dl_tell = [
        "{p} needs to be finished by {d}.",
        "Set myself a deadline for {what}: {d}.",
        "The target for {p} is {d}, no excuses.",
    ]
    dl_move = [
        "{p} is slipping, new deadline is {d}.",
        "Pushed the due date for {what} out to {d}.",
        "Had to move {p}'s finish date, it's {d} now.",
        "Change of plan on {p}: aiming for {d} instead.",
    ]
    dl_ask = ["When is {p} due now?", "What's the current deadline for {p}?",
              "By when do I have to wrap up {p}?", "What date am I aiming to finish {p}?"]
    ts, qs = [], []
    for i, (p, what) in enumerate(PROJECTS.items()):
        s = pick(rng, stack_tell).format(p=p, s=STACKS[i])
        h = pick(rng, help_tell).format(n=helpers[i], r=DESIGN_ROLES[i], p=p)
        ts += [(_day(rng, 5, 150), s), (_day(rng, 20, 250), h)]
        qs.append(("single fact", pick(rng, stack_ask).format(p=p), [s]))
        qs.append(("single fact", pick(rng, help_ask).format(p=p), [h]))
        qs.append(("multi-message", pick(rng, both_ask).format(p=p), [s, h]))
        day = _day(rng, 0, 60)
        due = day + rng.randint(60, 120)
        last = pick(rng, dl_tell).format(p=p, what=f"{p} ({what})", d=_date(due))
        ts.append((day, last))
        for _ in range(1 + i % 3):
            day = min(day + rng.randint(30, 90), 355)
            due = max(due, day) + rng.randint(20, 60)
            last = pick(rng, dl_move).format(p=p, what=p, d=_date(min(due, 364)) + ("" if due <= 364 else " next year"))
            ts.append((day, last))
        qs.append(("update", pick(rng, dl_ask).format(p=p), [last]))
    return ts, qs


STASHED = [
    # (item as told, item as asked)
    ("spare car key", "the extra key for the car"), ("passport", "my passport"),
    ("dishwasher warranty papers", "the guarantee for the dishwasher"), ("tent poles", "the camping poles"),
    ("Christmas decorations", "the xmas ornaments"), ("old external hard drive", "the backup disk"),
    ("birth certificates", "our birth certs"), ("bike lock key", "the key to my bicycle lock"),
    ("good scissors", "the sharp scissors"), ("spare SIM card", "that extra SIM"),
]
PLACES = ["top drawer of the hall dresser", "blue shoebox under the bed", "filing box in the attic",
          "garage, behind the paint tins", "kitchen cupboard above the fridge", "glovebox",
          "small safe in the wardrobe", "toolbox in the shed", "desk drawer in the study", "biscuit tin on the bookshelf"]


def stashes(rng):
    tell = ["Put the {i} in the {p} so it doesn't wander off.", "The {i} are now in the {p}." ,
            "If I lose track again: {i} went into the {p}.", "Tidied up, the {i} lives in the {p} from now on."]
    ask = ["Where did I leave {a}?", "Where can I find {a}?", "Where did I stash {a}?"]
    ts, qs = [], []
    for (i, a), p in zip(STASHED, PLACES):
        t = pick(rng, tell).format(i=i, p=p)
        ts.append((_day(rng, 0, 330), t))
        qs.append(("single fact", pick(rng, ask).format(a=a), [t]))
    return ts, qs


def foods(rng, people):
    restr = ["is vegan", "can't have gluten", "is allergic to peanuts", "doesn't eat pork",
             "is lactose intolerant", "hates coriander with a passion", "doesn't drink alcohol", "is allergic to shellfish"]
    tell = ["Remember {n} {r}, for when they come to dinner.", "{n} {r}, so plan the menu around that.",
            "Dinner party note: {n} {r}."]
    ask = ["Is there anything {n} can't eat?", "What should I avoid cooking for {n}?", "Does {n} have a dietary restriction?"]
    ts, qs = [], []
    for n, r in zip(people, restr):
        t = pick(rng, tell).format(n=n, r=r)
        ts.append((_day(rng, 0, 340), t))
        qs.append(("single fact", pick(rng, ask).format(n=n), [t]))
    return ts, qs


BOOKS = ["The Overstory", "Piranesi", "A Gentleman in Moscow", "The Dispossessed", "Stoner", "Klara and the Sun",
         "The Left Hand of Darkness", "Middlemarch", "Pachinko", "The Name of the Rose"]


def recommendations(rng, people):
    tell = ["{n} keeps telling me to read {b}.", "{n} swears by {b}, should add it to my list.",
            "Got a recommendation from {n}: {b}."]
    ask = ["Which book did {n} suggest?", "What was {n} urging me to read?", "What novel did {n} recommend?"]
    ts, qs = [], []
    for n, b in zip(people, BOOKS):
        t = pick(rng, tell).format(n=n, b=b)
        ts.append((_day(rng, 0, 340), t))
        qs.append(("single fact", pick(rng, ask).format(n=n), [t]))
    return ts, qs


BOUGHT = [("standing desk", "the desk I stand at", "Ergoform"), ("rowing machine", "the rower", "Decathlon"),
          ("espresso machine", "the coffee maker", "a shop in the old town"), ("winter coat", "my new parka", "Uniqlo"),
          ("drone", "the quadcopter", "a second-hand listing"), ("electric toothbrush", "the new toothbrush", "the pharmacy"),
          ("sofa bed", "the fold-out couch", "IKEA"), ("road bike", "my new bicycle", "the cycle shop on Mill Lane")]


def purchases(rng):
    tell = ["Bought {a_i} from {s}, {p} euros.", "Treated myself to {a_i} at {s}, cost {p} euros.",
            "The {i} arrived, got it from {s} for {p} euros."]
    ask = ["How much did {a} cost me?", "What did I pay for {a}?", "How much money did I spend on {a}?"]
    ts, qs = [], []
    for i, a, s in BOUGHT:
        a_i = ("an " if i[0] in "aeiou" else "a ") + i
        t = pick(rng, tell).format(i=i, a_i=a_i, s=s, p=rng.randint(40, 1400))
        ts.append((_day(rng, 0, 340), t))
        qs.append(("single fact", pick(rng, ask).format(a=a), [t]))
    return ts, qs


CODES = [("door code for the bike shed", "the bike shed code"), ("locker combination at the pool", "my swimming pool locker combo"),
         ("library card number", "the number on my library card"), ("wifi password at the allotment hut", "the allotment wifi"),
         ("alarm code for the studio", "the studio alarm pin"), ("customer number with the water company", "my water account number")]


def codes(rng):
    tell = ["The {c} is {v}.", "Writing this down: {c} = {v}.", "New {c}: {v}."]
    ask = ["What's {a}?", "Can you tell me {a}?", "Remind me of {a}."]
    ts, qs = [], []
    for c, a in CODES:
        v = f"{rng.randint(1000, 9999)}-{rng.choice('KMRTX')}{rng.randint(10, 99)}"
        t = pick(rng, tell).format(c=c, v=v)
        ts.append((_day(rng, 0, 340), t))
        qs.append(("single fact", pick(rng, ask).format(a=a), [t]))
    return ts, qs
