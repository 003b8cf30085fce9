"""The owner's own life in the synthetic year (eval/year.py): where they live, their job, the
dog, plans that change (updates), things done on a day (dates) and answers spread over several
messages. Same shapes as eval/year_facts.py: `(tellings, questions)`.
"""
from year_facts import _date, _day, pick


def chain(rng, tellings, asks, category="update"):
    """A value told and then changed: `tellings` is [(day, [phrasings])] in order; the question
    is answered by the last telling only."""
    ts = [(day, pick(rng, ph)) for day, ph in tellings]
    return ts, [(category, pick(rng, asks), [ts[-1][1]])]


def home_and_work(rng):
    ts, qs = [], []
    for t, q in [
        chain(rng, [
            (2, ["We're renting the flat at 27 Albion Terrace in Leeds, second floor.",
                 "Our place is 27 Albion Terrace, Leeds, the one above the bakery."]),
            (150, ["Keys collected! We're moving into 9 Orchard Lane in Bristol on Saturday.",
                   "It's official, the new home is 9 Orchard Lane, Bristol, moving at the weekend."]),
        ], ["What's my address these days?", "Where am I living now?", "Which street is our home on at the moment?"]),
        chain(rng, [
            (4, ["I'm a backend developer at Fernwood Analytics, mostly ETL pipelines.",
                 "Work-wise: Fernwood Analytics, backend dev, pipelines all day."]),
            (170, ["Accepted the offer from Larkspur Labs, I start there as a staff engineer in August.",
                   "Signed with Larkspur Labs! Staff engineer role, starting in August."]),
        ], ["Who is my employer now?", "Which company am I working for at present?", "Where do I work these days?"]),
        chain(rng, [
            (10, ["My manager is Ruth Okonkwo, she's great about flexible hours.",
                  "Ruth Okonkwo is my boss, reviews are every quarter."]),
            (215, ["At Larkspur my new lead is Anders Vik, first one-to-one went well.",
                   "Anders Vik is the person I report to at Larkspur."]),
        ], ["Who do I report to now?", "Who's my line manager at the moment?", "Who is my current boss?"]),
        chain(rng, [
            (40, ["We adopted a puppy! A little spaniel, we're calling him Biscuit.",
                  "Meet the newest family member: a spaniel pup named Biscuit."]),
            (75, ["We've renamed the puppy Otis, Biscuit just never stuck.",
                  "The dog answers to Otis now, we changed his name from Biscuit."]),
        ], ["What's the dog called?", "What name did we give our spaniel in the end?", "What do we call the pup?"]),
        chain(rng, [
            (20, ["I drive a 2011 Ford Focus, silver, it rattles but it goes.",
                  "The car's an old silver Focus, 2011 model."]),
            (260, ["Sold the Focus and bought a used Kia Niro EV, blue.",
                   "We're electric now: picked up a blue Kia Niro, the Focus is gone."]),
        ], ["What car do I have now?", "What am I driving these days?", "Which vehicle do I own at present?"]),
        chain(rng, [
            (15, ["My dentist is Dr. Szabo on Harrow Road.", "Dental stuff goes to Dr. Szabo, Harrow Road practice."]),
            (230, ["Switched dentists after the move, now I go to Dr. Achebe at Clifton Smiles.",
                   "New dentist in Bristol: Dr. Achebe, Clifton Smiles."]),
        ], ["Who looks after my teeth now?", "Which dental practice am I with currently?"]),
        chain(rng, [
            (8, ["I've joined PureGym on Kirkstall Road, 6am sessions.", "Gym membership: PureGym Kirkstall Road."]),
            (190, ["Cancelled PureGym, joined the climbing centre The Foundry in Bristol instead.",
                   "Working out at The Foundry bouldering wall now, gave up the old gym."]),
        ], ["Where do I exercise now?", "Which gym am I a member of at the moment?"]),
        chain(rng, [
            (30, ["Spanish class is on Tuesday evenings.", "My Spanish lessons are Tuesdays at seven."]),
            (120, ["Spanish moved to Wednesdays, the teacher changed her schedule.",
                   "Heads up, Spanish lessons are now on Wednesday nights."]),
            (280, ["Spanish is switching to Thursday evenings from next week.",
                   "Thursdays are Spanish now, third schedule change this year."]),
        ], ["Which night is my language lesson now?", "What evening do I have Spanish these days?"]),
        chain(rng, [
            (25, ["Choir practice is Mondays in the church hall.", "Mondays are choir night, church hall."]),
            (200, ["Choir has moved to Friday afternoons at the community centre.",
                   "We sing on Fridays now, the community centre, after the hall was sold."]),
        ], ["When do I go singing now?", "Which day is choir practice at present?"]),
        chain(rng, [
            (50, ["Summer holiday plan: two weeks in Crete in August.", "Thinking Crete for the August break."]),
            (140, ["Change of plan for August, we're doing the Lofoten islands instead of Crete.",
                   "Scrapped Crete, August is going to be Lofoten in Norway."]),
        ], ["Where are we going for the summer holiday?", "What's the destination for the August trip?"]),
        chain(rng, [
            (60, ["The team offsite is in Lisbon in October.", "Work offsite: Lisbon, October."]),
            (240, ["Offsite got moved from Lisbon to Edinburgh, budget reasons.",
                   "They relocated the company offsite, Edinburgh now."]),
        ], ["Where is the work retreat being held?", "Which city is the company away-day in now?"]),
        chain(rng, [
            (12, ["Running goal for the year: 10k in under 55 minutes.", "I want a sub-55 10k this year."]),
            (160, ["Smashed the 55 minute 10k, new target is under 50.", "Raising my running goal: 10k under 50 minutes."]),
        ], ["What's my running target now?", "What time am I aiming for in the 10k?"]),
        chain(rng, [
            (35, ["My GP is Dr. Wallace at Headingley Surgery.", "Registered with Dr. Wallace at the Headingley practice."]),
            (205, ["Registered with a new GP in Bristol, Dr. Mensah at Redland Medical.",
                   "New family doctor after the move: Dr. Mensah, Redland Medical."]),
        ], ["Who is my doctor now?", "Which medical practice am I registered with these days?"]),
    ]:
        ts += t
        qs += q
    return ts, qs


EVENTS = [
    # (day, [tellings], [questions])
    (45, ["Ran my first half marathon this morning, 2:04, legs are jelly.",
          "Did it, crossed the finish line of the half marathon in 2:04!"],
     ["When did I run the half?", "On what date was my first 21k race?"]),
    (290, ["Got the flu jab at the pharmacy on my lunch break.", "Flu vaccine done today, arm is sore."],
     ["When was I vaccinated against the flu?", "What day did I get my flu shot?"]),
    (140, ["Signed the rental contract for the Bristol house today!", "Lease signed for Orchard Lane this afternoon."],
     ["When did I sign the lease?", "On which day was the tenancy agreement for the new place signed?"]),
    (160, ["Final round interview at Larkspur Labs today, think it went well.",
           "Last interview with Larkspur done, fingers crossed."],
     ["When was my final interview for the new job?", "What day did I have the last round with Larkspur?"]),
    (97, ["Heron 1.0 is live in the app store, shipped it tonight!", "Released the first version of Heron today."],
     ["When did the bird app launch?", "When did I ship version one of Heron?"]),
    (88, ["Took Otis for his second round of vaccinations at the vet.", "Otis had his jabs at the vet today, brave boy."],
     ["When did the dog get his shots?", "When was the puppy's vet visit for vaccines?"]),
    (63, ["Finally fixed the dripping bathroom tap, new washer did it.", "Bathroom tap no longer drips, fixed it myself."],
     ["When did I repair the leak in the bathroom?", "What day did I sort out the tap?"]),
    (110, ["Renewed my passport at the post office today.", "Passport renewal application sent off this morning."],
     ["When did I apply for my new passport?", "When did I deal with the passport renewal?"]),
    (150, ["Eye test at the optician today, turns out I need glasses for driving.",
           "Had my eyes checked this morning, glasses for driving from now on."],
     ["When did I get my vision checked?", "What day was my appointment at the optician?"]),
    (122, ["Saw Wet Leg live at the O2 Academy tonight, incredible.", "Wet Leg gig at the O2 Academy, best concert in ages."],
     ["When was the Wet Leg concert?", "On what date did I see that band live at the Academy?"]),
    (176, ["Root canal this morning, I can't feel half my face.", "Had the root canal done today, ugh."],
     ["When did I have my dental surgery?", "When was the nerve treatment on my tooth?"]),
    (95, ["Planted the tomato seedlings in the raised bed.", "Tomatoes are in the ground, six plants in the raised bed."],
     ["When did I put the tomatoes in?", "On which day did the tomato plants go into the garden?"]),
    (70, ["The Focus failed its MOT today, brakes again.", "MOT fail on the Focus this morning, rear brakes."],
     ["When did the car fail its inspection?", "What day did the old car not pass the MOT?"]),
    (168, ["Handed in my notice at Fernwood today, weird feeling.", "Resigned from Fernwood this morning."],
     ["When did I quit my old job?", "What day did I resign?"]),
    (210, ["Sold my old mountain bike on the marketplace for 180.", "The mountain bike found a buyer today, 180 cash."],
     ["When did I get rid of the mountain bike?", "What day did the MTB sell?"]),
    (185, ["Painted the spare bedroom sage green, two coats.", "Spare room is green now, finished painting it today."],
     ["When did I decorate the guest room?", "What day did I paint the spare room?"]),
    (30, ["Had my first cello lesson today, it sounds like a dying goose.", "Started learning the cello this evening."],
     ["When did I take up the cello?", "When was my first lesson on the instrument?"]),
    (230, ["Priya's baby arrived this morning, a girl called Ada!", "Priya gave birth today, little Ada, everyone's fine."],
     ["When was Priya's daughter born?", "What day did Priya have the baby?"]),
    (255, ["Climbed Ben Nevis with Kwame, brutal but worth it.", "Summited Ben Nevis today with Kwame, the views!"],
     ["When did I hike up Ben Nevis?", "When was the big mountain walk in Scotland?"]),
    (320, ["Broke my wrist falling off the skateboard, cast for six weeks.", "Fractured wrist, skateboard accident, in a cast now."],
     ["When did I injure my arm?", "What day did I break my wrist?"]),
    (85, ["Submitted the tax return, a month early for once.", "Tax return filed today."],
     ["When did I file my taxes?", "When did I send in the tax return?"]),
    (300, ["Cancelled the Netflix subscription, never watch it.", "No more Netflix, cancelled it today."],
     ["When did I stop the streaming subscription?", "What day did I drop Netflix?"]),
    (240, ["The new laptop arrived, a ThinkPad X1, setting it up now.", "Unboxed the ThinkPad X1 today."],
     ["When did my new computer arrive?", "What day did the ThinkPad get delivered?"]),
    (340, ["Got the Christmas tree today, a nordmann fir.", "Bought the Christmas tree this afternoon."],
     ["When did we get the tree?", "What day did the fir tree come home?"]),
    (130, ["Pebblefall playtest night with six people, the trading round works!", "Ran the first Pebblefall playtest tonight."],
     ["When did I first playtest the board game?", "When was the game testing evening?"]),
]


def events(rng):
    ts, qs = [], []
    for day, tells, asks in EVENTS:
        t = pick(rng, tells)
        ts.append((day, t))
        qs.append(("date", pick(rng, asks), [t]))
    return ts, qs


def multi(rng):
    """Answers spread over several messages on different days."""
    groups = [
        ([(150, "Lofoten flights booked: Norwegian, out via Oslo on 9 August."),
          (155, "Found a rorbu cabin in Reine for the Lofoten week, deposit paid."),
          (170, "Hire car for Lofoten sorted with Avis, pick-up at Leknes.")],
         ["What have I already arranged for the Norway holiday?", "What's booked so far for the August trip?"]),
        ([(60, "Started taking sertraline, 50mg in the mornings."),
          (200, "The doctor added vitamin B12 injections every three months."),
          (290, "Now also on a low-dose antihistamine for the hay fever.")],
         ["What medication am I on?", "Which medicines and supplements do I take regularly?"]),
        ([(80, "Finished reading Piranesi, what a strange lovely book."),
          (175, "Done with The Dispossessed, slow start but brilliant."),
          (305, "Just closed the last page of Middlemarch, took me all autumn.")],
         ["Which books have I finished reading?", "What novels did I get through?"]),
        ([(230, "The electrician rewired the kitchen at Orchard Lane, all up to code."),
          (265, "New combi boiler installed, no more cold showers."),
          (310, "Roofer fixed the leaking gutter over the back door.")],
         ["What work have we had done on the Bristol house?", "Which repairs happened at the new place?"]),
        ([(100, "Lent my circular saw to Declan for his deck."),
          (190, "Mei borrowed the camping stove for her festival."),
          (270, "Hamish has my good ladder until he finishes painting.")],
         ["Who has borrowed my stuff?", "Which of my things are lent out and to whom?"]),
    ]
    ts, qs = [], []
    for tells, asks in groups:
        ts += tells
        qs.append(("multi-message", pick(rng, asks), [t for _, t in tells]))
    return ts, qs


def all_facts(rng, people, cities):
    """Every telling and question of the year, from the seeded `rng`."""
    import year_facts as f

    ts, qs = [], []
    parts = [
        f.friends_cities(rng, people[:20], cities),
        f.birthdays(rng, people[20:30] + people[:5]),
        f.jobs(rng, people[5:20]),
        f.projects(rng, people[10:18]),
        f.stashes(rng),
        f.foods(rng, people[18:26]),
        f.recommendations(rng, people[2:12]),
        f.purchases(rng),
        f.codes(rng),
        home_and_work(rng),
        events(rng),
        multi(rng),
    ]
    for t, q in parts:
        ts += t
        qs += q
    return ts, qs


__all__ = ["all_facts", "_date", "_day"]
