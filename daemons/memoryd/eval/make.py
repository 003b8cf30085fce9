#!/usr/bin/env python3
"""Writes the recall evaluation's session logs (docs/sessions.md) under eval/sessions/.

The owner's past conversations are written out here as data and turned into real session
directories: heads and epoch logs exactly as loopd writes them. Run it again after
editing; the output is committed so `scripts/bench recall` needs no Python.

Each session is a list of epochs; each epoch a list of turns:
  ("o", text)                   the owner says text; the assistant answers with a short ack
  ("oa", text, reply)           the owner says text, the assistant replies `reply`
  ("dup", text)                 as "o", the owner's line logged twice (a SessionFull rerun)
  ("a", text)                   the assistant says text on its own (a heartbeat answer)
  ("tool", name, args, raw, summary, klass, untrusted)
                                a tool call, its raw result (never indexed) and summary
"""
import json, os, shutil, sys
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "sessions")

ACKS = [
    "Noted, I'll remember that.",
    "Got it.",
    "Okay, saved.",
    "Thanks, I've noted it.",
    "Understood.",
    "All right, I'll keep that in mind.",
]

SESSIONS = {
  "home": [
    [  # epoch 0: settling in
      ("o", "My dentist appointment is on Thursday at 3pm with Dr. Alvarez."),
      ("o", "I'm allergic to penicillin, please remember that."),
      ("o", "My sister Maria lives in Lisbon and her birthday is June 4."),
      ("o", "The wifi password at the cabin is on the fridge."),
      ("oa", "What's a good time to water tomatoes?", "Early morning is best: the soil stays moist through the heat of the day and the leaves dry quickly."),
      ("o", "The wifi at home is called Bluebird-5G, the router is in the hallway closet."),
      ("o", "Our plumber is Greg Hanley, his number is 555-0142."),
      ("oa", "Can you suggest a name for the new cat?", "How about Miso, Pepper or Juniper?"),
      ("o", "We named the cat Juniper. She's a grey tabby, about four months old."),
      ("o", "Juniper's vet is Dr. Okafor at Riverside Animal Clinic."),
      ("o", "The spare house key is under the blue flower pot by the back door."),
      ("oa", "How long should I boil an egg for a soft yolk?", "About six and a half minutes from boiling water, then straight into cold water."),
      ("o", "Garbage goes out on Tuesday nights, recycling every other Wednesday."),
      ("o", "My gym membership renews on the 15th of every month, 39 euros."),
      ("o", "The boiler was serviced in October by Northside Heating; next service due next October."),
      ("oa", "Remind me what temperature the oven should be for the sourdough.", "You told me earlier you bake it at 250 degrees for the first 20 minutes with the lid on."),
      ("o", "I bake sourdough at 250 degrees for 20 minutes lid on, then 20 minutes lid off at 230."),
      ("o", "My blood type is O negative."),
      ("o", "Tom's shoe size is 44 and he prefers dark colours."),
      ("o", "The car is a 2017 Skoda Octavia, plate KX-482-PL."),
      ("a", "Good morning! Nothing urgent today; you have a dentist appointment on Thursday."),
    ],
    [  # epoch 1: after a compaction
      ("o", "The car insurance is with Meridian, policy number MRD-7731-0042, renews March 1."),
      ("o", "Maria called: she's moving from Lisbon to Porto in September."),
      ("oa", "Is it worth fixing a dripping tap myself?", "Usually yes: a worn washer or cartridge is cheap and takes about half an hour with the water shut off."),
      ("o", "The kitchen tap is a Grohe Eurosmart, cartridge size 35 mm."),
      ("o", "I lent my cordless drill to our neighbour Pete in number 12."),
      ("o", "Our electricity provider is Voltaro, customer number 88120934."),
      ("o", "The WiFi password for guests at home is sunflower-tea-42."),
      ("o", "I take vitamin D every morning, 1000 IU."),
      ("o", "My mother's phone number is +44 20 7946 0018."),
      ("oa", "What should I pack for a weekend of hiking?", "Layers, a rain jacket, a first aid kit, a map, two litres of water per person and snacks."),
      ("o", "Tom is allergic to cats, mildly; he takes an antihistamine when he visits."),
      ("o", "We're hosting the book club on the 22nd, it's my turn to pick: I chose 'The Remains of the Day'."),
      ("o", "Passport expires on 2027-08-19, renew it early in 2027."),
      ("o", "The cleaner, Ana, comes every second Friday and is paid 60 euros in cash."),
      ("o", "I ordered a new sofa from Hallmark Living, order 55-09812, delivery between 10 and 14 November."),
      ("tool", "http_fetch", "{\"url\":\"https://www.example-weather.test/cabin\"}",
        "<html>Forecast: snow Saturday, -4C overnight, winds 30 km/h</html>",
        "Weather at the cabin this weekend: snow on Saturday, down to -4C overnight, strong wind around 30 km/h.", "public", True),
      ("oa", "Should I drive up to the cabin on Saturday then?", "With snow and strong wind forecast, leaving on Sunday morning would be safer; take the winter tyres either way."),
      ("o", "The cabin key box code is 1987."),
    ],
    [  # epoch 2
      ("o", "Juniper had her first vaccination on 3 November; the booster is due in four weeks."),
      ("o", "The sofa delivery moved to 18 November."),
      ("o", "Pete returned the drill, but the battery charger is still at his place."),
      ("oa", "What's the difference between baking soda and baking powder?", "Baking powder already contains an acid; baking soda needs an acidic ingredient like buttermilk to rise."),
      ("o", "I want to start running again: 5 km three times a week, Monday, Wednesday, Saturday."),
      ("o", "My running shoes are Brooks Ghost 15, size 43."),
      ("o", "Tom's birthday is 11 February; he wants a record player."),
      ("o", "The smoke alarm in the upstairs hallway beeps: battery needs replacing, it takes a 9V."),
      ("o", "Water meter reading on 1 December: 04512 cubic metres."),
      ("oa", "Can you help me plan meals for next week?", "Sure: Monday lentil soup, Tuesday salmon with rice, Wednesday vegetable curry, Thursday pasta, Friday homemade pizza."),
      ("dup", "Remember we're out of olive oil and dishwasher tablets."),
      ("o", "The heating engineer said the boiler pressure should sit between 1 and 1.5 bar."),
    ],
  ],
  "work": [
    [
      ("o", "I'm starting at Keller & Dunn on Monday, my manager is Priya Raman."),
      ("o", "My work laptop asset tag is KD-LT-20931."),
      ("o", "Standup is at 9:30 every day on the third floor, room Orion."),
      ("o", "Here's the e-mail from Priya:\n\nFrom: Priya Raman <priya.raman@kellerdunn.example>\nSubject: Q4 planning\n\nHi, please send me the feedback.xlsx with the customer survey results by Friday. The board meeting moved to 14 December. Thanks, Priya"),
      ("oa", "Can you summarise what Priya wants?", "She wants the feedback.xlsx with the customer survey results by Friday, and notes the board meeting moved to 14 December."),
      ("o", "The VPN needs the Keller token app; support line is extension 4410."),
      ("o", "My employee number is 463820."),
      ("o", "Project Falcon is the billing migration; deadline is end of January."),
      ("o", "The staging server is falcon-staging.kellerdunn.example, deploys go through Jenkins."),
      ("oa", "How do I politely decline a meeting?", "Thank them, say you can't attend, offer an alternative like a written update or another time."),
      ("o", "Lunch with Daniel from the data team on Wednesday at 12:30, Thai place on Mill Street."),
      ("o", "Expense reports are due on the 5th of each month in Concur."),
      ("o", "My desk is 3.14, next to the window."),
      ("tool", "read_file", "{\"path\":\"/home/me/work/falcon-notes.md\"}",
        "# Falcon\n- cutover weekend 24-25 Jan\n- rollback owner: Sven\n- DB: postgres 15",
        "Falcon notes: the cutover is planned for the weekend of 24-25 January, Sven owns the rollback plan, the database is PostgreSQL 15.", "private", False),
      ("o", "The parking permit for the office garage is number P-2291, level -2."),
      ("o", "Priya prefers updates in writing, short bullet points, Friday afternoons."),
    ],
    [
      ("o", "Falcon cutover moved to 31 January because of the audit."),
      ("o", "The customer survey had 412 responses; satisfaction score 7.8 out of 10."),
      ("o", "Daniel's e-mail is daniel.osei@kellerdunn.example, he owns the reporting dashboards."),
      ("oa", "What's a good structure for a project retrospective?", "What went well, what didn't, what we'll change, and who owns each change."),
      ("o", "My performance review is on 9 January with Priya and HR."),
      ("o", "The team offsite is in Ghent, 6 to 7 March, hotel is the Pand."),
      ("o", "The Jenkins job for Falcon is called falcon-deploy-prod; never run it on Fridays."),
      ("o", "Sven is on paternity leave from 10 February for six weeks."),
      ("o", "I submitted the feedback.xlsx to Priya on Thursday."),
      ("o", "The wifi in the office is KD-Guest, password changes every Monday, ask reception."),
      ("o", "Annual leave left this year: 6 days, must be used before 31 March."),
    ],
  ],
  "health": [
    [
      ("o", "Dr. Chen is my GP at the Elm Street practice; appointments via their app."),
      ("o", "My blood pressure this morning was 128 over 82."),
      ("o", "The physiotherapist for my knee is Lena Brandt, Tuesdays at 8am."),
      ("oa", "What stretches help with a sore lower back?", "Knee-to-chest, cat-cow and child's pose, held gently for 20 to 30 seconds each."),
      ("o", "I had a tetanus shot in April 2023."),
      ("o", "Prescription for ibuprofen gel renewed, pharmacy is Greenleaf on the corner."),
      ("o", "My cholesterol was 5.2 at the last check, the doctor wants it under 5."),
      ("o", "Eye test result: minus 1.75 in both eyes, new glasses ordered from Specsavers."),
      ("o", "I'm trying to cut coffee to two cups a day."),
      ("oa", "Is it okay to run with a sore knee?", "Light running may be fine if the pain is mild and doesn't get worse, but ask your physiotherapist; stop if it sharpens."),
      ("o", "Lena said no running for two weeks, only cycling and the exercises."),
      ("o", "Dentist follow-up: Dr. Alvarez wants to see me again in six months for the filling."),
      ("o", "I'm not allergic to ibuprofen, only penicillin."),
    ],
  ],
  "trip-lisbon": [
    [
      ("o", "We're flying to Lisbon on 12 May, flight TP1331 departing 07:40 from Terminal 2."),
      ("o", "The hotel in Lisbon is Casa do Largo in Alfama, booking reference QX7HT2."),
      ("oa", "What should we see in Lisbon in three days?", "Alfama and the castle, Belém with the tower and pastéis, the LX Factory, and a day trip to Sintra."),
      ("o", "Maria will pick us up at the airport, she drives a red Fiat 500."),
      ("o", "Return flight is 16 May at 18:05, TP1334."),
      ("tool", "http_fetch", "{\"url\":\"https://www.sintra-tickets.test/pena\"}",
        "<html>Pena Palace: 9:30-18:30, tickets 20 EUR, book online, closed 25 Dec</html>",
        "Pena Palace in Sintra is open 9:30 to 18:30; tickets cost 20 euros and should be booked online.", "public", True),
      ("o", "Book the Pena Palace tickets for 14 May, 10:00 slot."),
      ("o", "Travel insurance is with Allsafe, policy AS-55-1290, emergency line +351 21 000 4455."),
      ("o", "Maria's new address in Porto: Rua das Flores 88, 4050-262 Porto."),
      ("o", "Dinner reservation at Taberna da Rua on 13 May at 20:00, under my name."),
      ("oa", "Do we need to tip in Portugal?", "Tipping is modest: rounding up or 5 to 10 percent in restaurants is appreciated but not expected."),
      ("o", "Bring the EU plug adapters, we have two in the desk drawer."),
    ],
  ],
  "house-move": [
    [
      ("o", "We're moving to 27 Orchard Lane on 1 February."),
      ("o", "The removal company is Swift Movers, quote 1450 euros, contact Hana."),
      ("o", "Internet at the new place: FibreNet install booked for 3 February between 8 and 12."),
      ("oa", "What should I do the week before a move?", "Confirm the movers, pack a first-night box, redirect post, take meter readings and defrost the freezer."),
      ("o", "The landlord at Orchard Lane is Mr. Baptiste, deposit paid: 2400 euros."),
      ("o", "Remember to redirect post with the post office, it costs 35 euros for six months."),
      ("o", "The new garage door opener code is 7741."),
    ],
    [
      ("o", "Moved in! The fuse box is in the cellar, behind the stairs."),
      ("o", "The bins at Orchard Lane go out on Thursday mornings."),
      ("o", "Gas meter reading at move-in: 18320."),
      ("o", "The Orchard Lane wifi network is Orchard27 and the password is on the router sticker."),
      ("oa", "How do I bleed a radiator?", "Turn the heating off, open the bleed valve with a radiator key until water comes out, close it, then check the boiler pressure."),
      ("o", "New neighbours: Ruth and Kofi at 25, they have a dog called Biscuit."),
      ("o", "The council tax band for Orchard Lane is C, paid by direct debit on the 1st."),
    ],
  ],
  "hobbies": [
    [
      ("o", "I'm learning the guitar; my teacher is Marco, lessons on Thursdays at 6pm."),
      ("o", "Currently practising 'Blackbird', the fingerpicking is hard."),
      ("oa", "How often should I change guitar strings?", "Every three months or so if you play regularly, sooner if they sound dull."),
      ("o", "My guitar is a Yamaha FG800, strings are 12-53 light gauge."),
      ("o", "The chess club meets on Mondays at the library, I'm rated 1420."),
      ("o", "I want to read 'Middlemarch' next, borrowed from Ruth."),
      ("o", "The garden allotment is plot 17, the gate code is 2468."),
      ("oa", "When should I plant garlic?", "In autumn, October to November, so it gets a cold spell before spring."),
      ("o", "Planted garlic in plot 17 on 20 October, variety Provence Wight."),
      ("o", "Photography: the Fujifilm X-T30 battery charger is in the camera bag's side pocket."),
      ("tool", "http_fetch", "{\"url\":\"https://chess-club.test/calendar\"}",
        "<html>Rapid tournament: 18 Jan, 10:00, entry 5 EUR</html>",
        "The chess club's rapid tournament is on 18 January at 10:00; entry costs 5 euros.", "public", True),
      ("o", "Sign me up for the rapid chess tournament, I'll pay the entry on the day."),
    ],
  ],
}

# Distractors: records that share words with the questions but do not answer them.
DISTRACTORS = {
  "misc": [
    [
      ("o", "I should find a new dentist closer to the office some day."),
      ("o", "Penicillin was discovered by Alexander Fleming in 1928, fun fact from the museum."),
      ("o", "My sister-in-law Clara lives in Madrid."),
      ("o", "The password manager needs updating on my phone."),
      ("o", "The wifi at the library is slow again."),
      ("o", "Maria from work (not my sister) recommended a podcast about history."),
      ("o", "The cabin needs a new roof gutter before winter."),
      ("o", "Priya's birthday cake order: chocolate, from the bakery on Mill Street."),
      ("o", "Flight prices to Porto are high in September."),
      ("o", "The car wash on Station Road is closed on Sundays."),
      ("o", "Ordered new guitar picks online, medium thickness."),
      ("o", "I might take a pottery class in the spring."),
      ("o", "The old address on Baker Road still gets some of our post."),
      ("o", "Allergy season starts early this year, the news said."),
      ("o", "The office printer password is reset by IT on request."),
      ("o", "Tom says hi to everyone at the book club."),
      ("o", "My phone's battery is dying fast, maybe time for a new one."),
      ("o", "Need to check the train times to the airport for the conference."),
      ("o", "The vet bills this year were higher than expected."),
      ("o", "Thursday is also the day the window cleaner comes."),
      ("o", "A 9V battery is also needed for the guitar tuner."),
      ("o", "The insurance letter about the house contents arrived, nothing to do."),
      ("o", "The garage at work is full by 9am most days."),
      ("o", "Reading about the history of Lisbon's 1755 earthquake."),
    ],
  ],
}

def times(start):
    t = start
    while True:
        yield t.strftime("%Y-%m-%dT%H:%M:%S.000Z")
        t += timedelta(minutes=7)

def write(name, epochs, clock, ack):
    d = os.path.join(OUT, name)
    os.makedirs(d)
    call = 0
    for n, turns in enumerate(epochs):
        head = {
            "epoch": n, "started": next(clock),
            "system": "You are a helpful assistant for one owner.",
            "tools": [], "carry": None if n == 0 else "Summary of the earlier conversation.",
            "carry_label": {"class": "private", "untrusted": False},
            "reason": "start" if n == 0 else "threshold", "summary_source": "model",
        }
        with open(os.path.join(d, f"epoch-{n:06}.head.json"), "w") as f:
            json.dump(head, f)
        with open(os.path.join(d, f"epoch-{n:06}.jsonl"), "w") as f:
            def rec(r):
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
            for t in turns:
                if t[0] == "dup":
                    rec({"type": "user", "time": next(clock), "content": t[1], "origin": "owner"})
                if t[0] in ("o", "oa", "dup"):
                    rec({"type": "user", "time": next(clock), "content": t[1], "origin": "owner"})
                    reply = t[2] if t[0] == "oa" else ACKS[ack[0] % len(ACKS)]
                    ack[0] += 1
                    rec({"type": "assistant", "time": next(clock), "content": reply, "tool_calls": []})
                elif t[0] == "a":
                    rec({"type": "user", "time": next(clock), "content": "heartbeat", "origin": "heartbeat"})
                    rec({"type": "assistant", "time": next(clock), "content": t[1], "tool_calls": []})
                elif t[0] == "tool":
                    _, tool, args, raw, summary, klass, untrusted = t
                    call += 1
                    cid = f"call_{call}"
                    rec({"type": "assistant", "time": next(clock), "content": None,
                         "tool_calls": [{"id": cid, "name": tool, "arguments": args}]})
                    rec({"type": "tool_result", "time": next(clock), "call": call, "tool_call_id": cid,
                         "name": tool, "content": raw, "class": klass, "untrusted": untrusted})
                    rec({"type": "tool_summary", "time": next(clock), "call": call, "tool_call_id": cid,
                         "content": summary, "class": klass, "untrusted": untrusted})
                    rec({"type": "assistant", "time": next(clock), "content": "I looked that up.", "tool_calls": []})
                else:
                    sys.exit(f"unknown turn {t[0]!r}")

def main():
    shutil.rmtree(OUT, ignore_errors=True)
    clock = times(datetime(2026, 9, 1, 8, 0, tzinfo=timezone.utc))
    ack = [0]
    for name, epochs in list(SESSIONS.items()) + list(DISTRACTORS.items()):
        write(name, epochs, clock, ack)

if __name__ == "__main__":
    main()
