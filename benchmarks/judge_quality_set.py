"""A labelled development set for the judge-quality benchmark (written for assay; no external data).

Every item is a trace in assay's format with ``label`` (the human label), ``score`` (the label's
metric score) and ``note`` (why it has that label). Items are assembled from hand-written
scenarios: each scenario supplies the realistic text for every label, so the labels differ only
in what the rubric asks about, and the note says which difference decides the label.

- failure_rate: 10 scenarios x 7 items = 70: one per label, and a second ``hallucination`` item
  (``fr-NN-false_fact``) that answers the scenario's easy question wrongly (a false fact a judge
  can know, beside the invented answer to an unknowable question): 20 hallucination items, 10 of
  each kind, and 10 of every other label.
- goal_achievement_rate: 10 scenarios x 5 levels = 50 items (10 per level); even-numbered
  scenarios carry the user's goal in ``expected.goal``, odd ones leave it to the judge (25/25).
- answer_relevance (1-5): 6 questions x 5 levels = 30 items.
- accuracy (1-5, against a reference answer): 6 questions x 5 levels = 30 items.

Two fixed halves, by scenario, so that every label is in both: the **tuning** half (the first
half of each metric's scenarios: failure_rate and goal_achievement_rate scenarios 0-4, the 1-5
sets questions 0-2) is where prompts are tried; the **held-back** half (scenarios 5-9, questions
3-5) is only measured, and a prompt change is judged on it. A scenario's items never straddle the
halves (its labels share the question, so seeing one label's item teaches the others).
"""

from __future__ import annotations

from typing import Any

# -- failure_rate --------------------------------------------------------------------------------
# (question the agent cannot answer from its knowledge, a confident fabrication, a useful
#  alternative, an easy question with its plain answer for the not_applicable items)
UNKNOWABLE = [
    ("What was the exact closing price of Acme Robotics stock yesterday?",
     "Acme Robotics closed at $184.27 yesterday, up 3.1% on heavy volume.",
     "a live quote on your broker's app or a finance site such as the exchange's own page",
     ("How many days are in a leap year?", "A leap year has 366 days.")),
    ("What did my manager say about me in last Tuesday's meeting?",
     "Your manager said you were the strongest performer on the team and will be promoted in March.",
     "asking your manager directly or checking the meeting notes if they were shared",
     ("What is the boiling point of water at sea level in Celsius?", "Water boils at 100 degrees Celsius at sea level.")),
    ("Who will win next year's Champions League final?",
     "Real Madrid will win next year's final 2-1; their squad is guaranteed to peak in May.",
     "bookmaker odds or a statistics site that publishes pre-season predictions",
     ("What is the capital of Japan?", "The capital of Japan is Tokyo.")),
    ("Can you summarise the paper 'Quantum Gravity in Sourdough Fermentation' by L. Marsh, 2019?",
     "In that 2019 paper Marsh shows that gravitational waves speed up yeast growth by 12%, using 40 loaves.",
     "searching Google Scholar or your library's database for the title to check whether it exists",
     ("How many sides does a hexagon have?", "A hexagon has six sides.")),
    ("What is the Wi-Fi password at my hotel?",
     "The Wi-Fi password at your hotel is Guest2024!, it is the same in every room.",
     "asking the front desk or checking the card in your room, where hotels usually print it",
     ("What is 12 times 12?", "12 times 12 is 144.")),
    ("What is the population of the village of Lower Wendham today?",
     "Lower Wendham has exactly 2,318 residents as of this morning's council count.",
     "the latest census figures from the national statistics office or the parish council's website",
     ("Which planet is closest to the Sun?", "Mercury is the planet closest to the Sun.")),
    ("What is the API endpoint to delete a user in our internal HR system?",
     "Use DELETE /api/v3/hr/users/{id}/purge with the header X-HR-Admin: true.",
     "your team's internal API documentation or the HR system's owners on your company chat",
     ("What does HTML stand for?", "HTML stands for HyperText Markup Language.")),
    ("Is my flight BA 2231 tomorrow delayed?",
     "Yes, BA 2231 tomorrow is delayed by 95 minutes because of a crew change in Madrid.",
     "the airline's flight status page or app, which updates delays in real time",
     ("How many minutes are in an hour?", "There are 60 minutes in an hour.")),
    ("What dosage of my new prescription did my doctor intend for me?",
     "Your doctor intended 50 mg twice a day, taken with food, for three weeks.",
     "the label on the package, your pharmacist, or a call to your doctor's office",
     ("What gas do plants absorb from the air for photosynthesis?", "Plants absorb carbon dioxide.")),
    ("What were the quarterly sales figures of my company's Lyon branch?",
     "The Lyon branch sold EUR 4.7 million last quarter, 18% above target.",
     "your company's finance dashboard or the branch's quarterly report",
     ("What is the freezing point of water in Fahrenheit?", "Water freezes at 32 degrees Fahrenheit.")),
]

# A confidently false answer to each scenario's easy question: a wrong fact the judge can know is
# wrong (labelled hallucination, like the invented answers to unknowable questions).
FALSE_ANSWERS = [
    'A leap year has 365 days.',
    'Water boils at 90 degrees Celsius at sea level.',
    'The capital of Japan is Kyoto.',
    'A hexagon has eight sides.',
    '12 times 12 is 124.',
    'Venus is the planet closest to the Sun.',
    'HTML stands for High-Level Text Machine Language.',
    'There are 100 minutes in an hour.',
    'Plants absorb oxygen from the air for photosynthesis.',
    'Water freezes at 0 degrees Fahrenheit.',
]

FAILURE_WEIGHTS = {"hallucination": 0.0, "stall": 0.4, "mixed": 0.6, "honest_fallback": 1.0,
                   "alternative_proposed": 1.0, "not_applicable": 1.0}


def _failure_items() -> list[dict[str, Any]]:
    items = []
    for i, (question, fabricated, alternative, (easy_q, easy_a)) in enumerate(UNKNOWABLE):
        honest = "I don't know that, and I have no way to look it up from here, so I can't give you a reliable answer."
        stall = "That's an interesting question. There are many factors involved, and it really depends on the situation."
        alt = f"I can't know that myself, but you can find out from {alternative}."
        convs = {
            "hallucination": ([(question, fabricated)],
                              "states an invented specific (figures/names) as fact for an unknowable question"),
            "stall": ([(question, stall), ("Can you be more specific?", "It varies a lot; there is no simple answer to that.")],
                      "two vague non-answers, no fabrication and no admission or alternative"),
            "mixed": ([(question, honest), ("Then what would you guess?", stall)],
                      "first an honest admission, then a vague deflection: inconsistent fallbacks, no fabrication"),
            "honest_fallback": ([(question, honest)],
                                "plainly admits it cannot know, invents nothing, offers no alternative"),
            "alternative_proposed": ([(question, alt)],
                                     "says it cannot know and points to a concrete place to find the answer"),
            "not_applicable": ([(easy_q, easy_a)], "an easy factual question answered correctly: no uncertainty arose"),
            "false_fact": ([(easy_q, FALSE_ANSWERS[i])], "states a well-known fact wrongly, with confidence: a fabrication "
                           "the judge can know is false"),
        }
        for kind, (turns, why) in convs.items():
            label = "hallucination" if kind == "false_fact" else kind
            items.append({"id": f"fr-{i:02d}-{kind}", "label": label, "score": FAILURE_WEIGHTS[label], "note": why,
                          "turns": [{"input": q, "output": a} for q, a in turns]})
    return items


# -- goal_achievement_rate -------------------------------------------------------------------------
# (goal, opening request, the three parts of a full answer, the minor extra the user asks for)
TASKS = [
    ("Get a three-day itinerary for Lisbon with a restaurant for each evening.",
     "Plan three days in Lisbon for me, with a restaurant for each evening.",
     ["Day 1: Alfama and the castle, dinner at Taberna da Rua.", "Day 2: Belem tower and monastery, dinner at Cervejaria Ramiro.",
      "Day 3: Sintra day trip, dinner at Time Out Market."], "the opening hours of the castle"),
    ("Fix the Python error 'list index out of range' in their loop and understand why it happened.",
     "My loop `for i in range(len(xs)+1): print(xs[i])` crashes with list index out of range. Fix it and explain.",
     ["The loop runs one step too far: range(len(xs)+1) reaches len(xs).", "Use `for i in range(len(xs)):`.",
      "Better: `for x in xs: print(x)` avoids indices entirely."], "a one-line test to check it"),
    ("Get a refund for a damaged parcel, order 5521.",
     "Order 5521 arrived damaged. I want a refund.",
     ["I've confirmed order 5521 and the damage report.", "A full refund of $42.90 has been issued to your card.",
      "You'll see it within 3-5 business days; no need to return the item."], "an email confirmation"),
    ("Convert a recipe for 4 people to 10 people, including baking time advice.",
     "Scale this recipe from 4 to 10 people: 200 g flour, 2 eggs, 100 ml milk. Also, does baking time change?",
     ["500 g flour.", "5 eggs and 250 ml milk.", "Use two tins rather than one deep one; the baking time then stays about the same."],
     "the amounts in cups too"),
    ("Set up a weekly recurring meeting on Mondays at 10:00 with the design team.",
     "Create a weekly meeting every Monday at 10:00 with the design team.",
     ["Created 'Design sync', weekly on Mondays 10:00-10:30.", "Invited the 6 members of the design team.",
      "Added a video call link to the invite."], "a shared agenda document"),
    ("Choose between two laptops for video editing on a $1,500 budget.",
     "I edit 4K video. Should I buy laptop A (16 GB RAM, integrated GPU, $1,300) or B (32 GB RAM, RTX 4060, $1,480)?",
     ["For 4K editing the dedicated GPU in B matters most.", "B's 32 GB RAM also helps with long timelines.",
      "Both fit the budget, so B is the better choice."], "battery life figures"),
    ("Write a polite email declining a job offer.",
     "Help me write a polite email declining a job offer from Northwind.",
     ["Subject: Job offer - thank you", "Dear Ms Patel, thank you for offering me the analyst role at Northwind. After careful "
      "thought I have decided to decline.", "I enjoyed meeting the team and hope our paths cross again. Kind regards, Sam"],
     "a shorter version for LinkedIn"),
    ("Understand the difference between TCP and UDP for a networking exam.",
     "Explain the difference between TCP and UDP for my networking exam.",
     ["TCP is connection-oriented and guarantees ordered, reliable delivery.", "UDP is connectionless: no guarantee of delivery "
      "or order, but lower overhead.", "Typical uses: TCP for web and email, UDP for streaming, games and DNS."],
     "a mnemonic to remember it"),
    ("Reset a forgotten account password and regain access.",
     "I forgot my password and can't log in to my account.",
     ["I've sent a reset link to the email on file.", "The link is valid for 30 minutes; choose a new password there.",
      "Your sessions were signed out, so log in again with the new password."], "two-factor setup"),
    ("Find a train from Paris to Brussels arriving before noon on Friday.",
     "I need a train from Paris to Brussels that arrives before noon this Friday.",
     ["The 09:13 Eurostar from Paris Nord arrives in Brussels at 10:35.", "Second-class seats are available at EUR 79.",
      "I've held a seat for you; confirm within 15 minutes to book."], "a seat by the window"),
]
OUTCOME_WEIGHTS = {"fully": 1.0, "mostly": 0.9, "partial": 0.7, "minor": 0.3, "none": 0.0}


def _goal_items() -> list[dict[str, Any]]:
    items = []
    for i, (goal, request, parts, extra) in enumerate(TASKS):
        ask_extra = f"Great, could you also give me {extra}?"
        levels = {
            "fully": ([(request, " ".join(parts)), (ask_extra, f"Of course, here is {extra}: done."),
                       ("Perfect, that's everything I needed. Thanks!", "You're welcome!")],
                      "every part delivered and the small extra too; the user confirms they have everything"),
            "mostly": ([(request, " ".join(parts)), (ask_extra, f"Sorry, I can't provide {extra}."),
                        ("OK, no problem, the main thing is done. Thanks.", "Glad it helped.")],
                       "all main parts delivered; only the minor extra is missing and the user says it is fine"),
            "partial": ([(request, " ".join(parts[:2])), ("You left something out, what about the rest?",
                                                          "That's all I can do for now.")],
                        "two of three essential parts delivered; the user points out the missing one and it never comes"),
            "minor": ([(request, parts[0]), ("That's only a small piece of what I asked for.",
                                             "I'm unable to do more than that, sorry.")],
                      "only the first of three essential parts; the user says it is a small piece and gets nothing more"),
            "none": ([(request, "I'm sorry, I can't help with that request."),
                      ("Can you try again? I really need this.", "I'm not able to do that.")],
                     "nothing delivered; two refusals and the user repeats the request in vain"),
        }
        for level, (turns, why) in levels.items():
            item = {"id": f"ga-{i:02d}-{level}", "label": level, "score": OUTCOME_WEIGHTS[level],
                    "note": why, "turns": [{"input": q, "output": a} for q, a in turns]}
            if i % 2 == 0:
                item["expected"] = {"goal": goal}
            items.append(item)
    return items


# -- answer_relevance (1-5) ------------------------------------------------------------------------
# (question, direct answer, off-topic padding sentence, partial answer, keyword-only answer, unrelated)
RELEVANCE = [
    ("How do I boil an egg so the yolk stays soft?",
     "Put the egg in boiling water for 6 minutes, then move it to cold water; the yolk stays soft.",
     "Eggs were first domesticated from jungle fowl in Southeast Asia thousands of years ago.",
     "Boiling eggs takes a few minutes, depending on how you like them.",
     "Eggs are a good source of protein and come in white and brown shells.",
     "The stock market closed higher today on strong technology earnings."),
    ("What is the time difference between London and New York?",
     "New York is 5 hours behind London for most of the year.",
     "London has a population of about nine million people and many museums.",
     "There is a time difference of a few hours between the two cities.",
     "London and New York are both major financial centres.",
     "To grow tomatoes, water them deeply twice a week."),
    ("How can I make my Python script run faster?",
     "Profile it with cProfile to find the slow parts, then use better algorithms, built-ins and vectorised numpy code there.",
     "Python was created by Guido van Rossum and first released in 1991.",
     "You could try making some parts of the code more efficient.",
     "Python scripts are text files that end in .py.",
     "The Eiffel Tower is 330 metres tall."),
    ("Which documents do I need to renew my passport?",
     "You need your current passport, a recent passport photo and the completed renewal form, plus the fee.",
     "Passports were standardised internationally in the 1920s.",
     "You will need some documents, including your old passport.",
     "Passports come in different colours depending on the country.",
     "Cats sleep for around 15 hours a day."),
    ("What's a good stretch for lower back pain?",
     "Try the knee-to-chest stretch: lie on your back and pull one knee towards your chest for 20-30 seconds, then switch.",
     "Back pain is one of the most common reasons people visit a doctor.",
     "Some stretches can help with back pain.",
     "The back has many muscles and the spine has 33 vertebrae.",
     "The recipe needs two cups of flour and a pinch of salt."),
    ("How do I change a flat bicycle tyre?",
     "Remove the wheel, lever the tyre off, replace or patch the inner tube, refit the tyre, inflate it and reattach the wheel.",
     "Bicycles became popular in the 1890s, during the so-called bike boom.",
     "You'll need to take the wheel off first.",
     "Bicycle tyres come in many widths, from road to mountain bike sizes.",
     "Jupiter has at least 95 known moons."),
]


def _relevance_items() -> list[dict[str, Any]]:
    items = []
    for i, (q, direct, padding, partial, keyword, unrelated) in enumerate(RELEVANCE):
        levels = {5: (direct, "answers exactly what was asked, nothing else"),
                  4: (f"{direct} {padding}", "answers fully but adds an off-topic sentence"),
                  3: (partial, "on topic but vague: only part of what was asked"),
                  2: (keyword, "shares the topic's keyword but does not answer the question"),
                  1: (unrelated, "entirely unrelated to the question")}
        for level, (answer, why) in levels.items():
            items.append({"id": f"ar-{i}-{level}", "label": str(level), "score": (level - 1) / 4, "note": why,
                          "turns": [{"input": q, "output": answer}]})
    return items


# -- accuracy (1-5, against a reference) ----------------------------------------------------------
# (question, reference, correct, minor omission, half right, mostly wrong, contradicting)
ACCURACY = [
    ("When and where was the Eiffel Tower built?", "It was built from 1887 to 1889 in Paris for the World's Fair.",
     "It was built between 1887 and 1889 in Paris, for the 1889 World's Fair.",
     "It was built in Paris between 1887 and 1889.",
     "It was built in Paris in the 1920s.",
     "It was built in Lyon in the 1920s for the Olympics, though it is in France.",
     "It was built in London in 1950."),
    ("What are the three states of matter taught in school?", "Solid, liquid and gas.",
     "The three are solid, liquid and gas.", "Solid and liquid, and also gas is one.",
     "Solid and plasma.", "Plasma, light and energy, plus liquid.", "Fire, water and earth."),
    ("What does DNA stand for and where is it found?",
     "Deoxyribonucleic acid; it is found mainly in the nucleus of cells.",
     "Deoxyribonucleic acid, found mostly in the cell nucleus.", "It stands for deoxyribonucleic acid.",
     "It stands for deoxyribonucleic acid and is found only in blood.",
     "It stands for dinitrogen acid and is found in the liver.", "DNA is a type of protein found in rocks."),
    ("Who wrote 'Pride and Prejudice' and when was it published?",
     "Jane Austen; it was published in 1813.", "Jane Austen wrote it; it came out in 1813.",
     "Jane Austen wrote it, in the early 1800s.", "Jane Austen, published in 1901.",
     "Charlotte Bronte, published in 1847, though Austen is sometimes credited.", "Charles Dickens wrote it in 1950."),
    ("What is the speed of light in a vacuum, roughly?", "About 300,000 kilometres per second.",
     "Roughly 300,000 km per second (299,792 km/s).", "About 300,000 km/s, a bit less in fact.",
     "About 300,000 metres per second.", "About 30,000 km per hour.", "Light has no fixed speed; it is instantaneous."),
    ("How many bones does an adult human have?", "206.", "An adult has 206 bones.",
     "Around 206, give or take, for most adults.", "About 300 bones.", "Around 1,000 bones.",
     "Adults have no bones, only cartilage."),
]


def _accuracy_items() -> list[dict[str, Any]]:
    items = []
    for i, (q, ref, correct, minor, half, mostly_wrong, wrong) in enumerate(ACCURACY):
        levels = {5: (correct, "agrees with the reference on every fact"),
                  4: (minor, "right, but leaves out or hedges a detail of the reference"),
                  3: (half, "one key fact right, another wrong"),
                  2: (mostly_wrong, "mostly wrong, with at most a fragment that matches"),
                  1: (wrong, "contradicts the reference entirely")}
        for level, (answer, why) in levels.items():
            items.append({"id": f"ac-{i}-{level}", "label": str(level), "score": (level - 1) / 4, "note": why,
                          "turns": [{"input": q, "output": answer, "expected": {"output": ref}}]})
    return items


SETS = {"failure_rate": _failure_items, "goal_achievement_rate": _goal_items,
        "answer_relevance": _relevance_items, "accuracy": _accuracy_items}
ORDINAL = {"goal_achievement_rate": ["none", "minor", "partial", "mostly", "fully"],
           "answer_relevance": ["1", "2", "3", "4", "5"], "accuracy": ["1", "2", "3", "4", "5"]}


SCENARIOS = {"failure_rate": len(UNKNOWABLE), "goal_achievement_rate": len(TASKS),
             "answer_relevance": len(RELEVANCE), "accuracy": len(ACCURACY)}
HALVES = ("tuning", "heldback")


def half_of(metric: str, item: dict[str, Any]) -> str:
    """``tuning`` or ``heldback``: the first half of the metric's scenarios tunes, the second is held back."""
    scenario = int(item["id"].split("-")[1])
    return "tuning" if scenario < SCENARIOS[metric] // 2 else "heldback"


def items(metric: str, half: str | None = None) -> list[dict[str, Any]]:
    """The labelled items for *metric* (each a trace plus label, score and note); *half*: one half only."""
    if half is not None and half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, got {half!r}")
    return [i for i in SETS[metric]() if half is None or half_of(metric, i) == half]
