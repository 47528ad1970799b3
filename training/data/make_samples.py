"""Writes the sample tenant datasets in this folder (deterministic; re-run to regenerate).

    python training/data/make_samples.py

Tenants (each a different domain and a different valid format):

* `acme.jsonl`      hardware store support chat      messages (system + user/assistant), SFT
* `globex.jsonl`    freight tracking notes            prompt / completion, SFT
* `initech.jsonl`   IT helpdesk knowledge base        text, SFT
* `umbrella.jsonl`  travel insurance claims desk      messages, two exchanges per row, SFT
* `hooli.jsonl`     code review tone                  prompt / chosen / rejected, DPO
* `piedpiper.jsonl` compression FAQ answers rated     prompt / completion / label, KTO
* `wayne.jsonl`     deliberately malformed messages   every kind of row error the preflight catches
* `stark.jsonl`     smart-home support search         anchor / positive / negative triplets, embedding
* `tyrell.jsonl`    smart-home support, graded        sentence1 / sentence2 / score pairs, embedding
* `builder.jsonl`   effort -> pull request traces     messages, SFT of the builder model (`--full`)
* `lumon.jsonl`     malformed preference pairs        the DPO preflight's row errors
* `vandelay.jsonl`  malformed KTO rows                the KTO preflight's row errors
* `oscorp.jsonl`    malformed embedding rows          the embedding preflight's row errors
* `massive.jsonl`   warehouse arithmetic              prompt / answer, GRPO (verifiable rewards, with
                                                      `massive_rewards.py`, the tenant's own reward)
* `cyberdyne.jsonl` robot support replies, ranked     prompt / chosen / rejected, reward model

The files are committed; this script is how they were made.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _write(name: str, rows: list[object]) -> None:
    path = HERE / name
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(row if isinstance(row, str) else json.dumps(row, ensure_ascii=False))
            f.write("\n")


def acme(rng: random.Random, n: int = 300) -> list[dict]:
    items = [
        "cordless drill",
        "claw hammer",
        "circular saw",
        "socket set",
        "step ladder",
        "wood glue",
        "paint roller",
        "tape measure",
        "wet vac",
        "hedge trimmer",
        "pipe wrench",
        "stud finder",
    ]
    system = "You are Acme Hardware's support assistant. Be brief and concrete."
    asks: list[Callable[[str, int], tuple[str, str]]] = [
        lambda it, q: (
            f"Do you have {q} {it}s in stock?",
            f"Yes, we have {q} {it}s in stock. Order before 3 pm for same-day pickup.",
        ),
        lambda it, q: (
            f"My {it} arrived broken. What now?",
            f"Sorry about the {it}. Reply with your order number and we ship a "
            "replacement within 2 days; no need to return the broken one.",
        ),
        lambda it, q: (
            f"Can I return a {it} after {q} weeks?",
            f"Returns are accepted within 4 weeks. After {q} weeks "
            + (
                "you can still return the " + it + "."
                if q <= 4
                else "we can offer store credit for the " + it + "."
            ),
        ),
        lambda it, q: (
            f"How long is the warranty on the {it}?",
            f"The {it} has a 2-year warranty; keep your receipt or order email.",
        ),
        lambda it, q: (
            f"What does shipping cost for {q} {it}s?",
            "Shipping is free over $50; otherwise it is a flat $6.95.",
        ),
    ]
    names = ["Ana", "Ben", "Chloe", "Dev", "Eva", "Femi", "Gus", "Hana", "Ivo", "Jin"]
    rows = []
    for i in range(n):
        it, q = rng.choice(items), rng.randint(1, 8)
        user, assistant = rng.choice(asks)(it, q)
        name = rng.choice(names)
        user = f"Hi, {name} here, order A-{5000 + i}. {user}"
        assistant = f"Hi {name}! {assistant}"
        rows.append(
            {
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                    {"role": "assistant", "content": assistant},
                ]
            }
        )
    return rows


def globex(rng: random.Random, n: int = 250) -> list[dict]:
    cities = ["Rotterdam", "Hamburg", "Antwerp", "Valencia", "Gdansk", "Le Havre", "Genoa"]
    states = [
        ("departed", "is on its way"),
        ("arrived", "has arrived"),
        ("held at customs", "is waiting for customs clearance"),
        ("delayed", "is delayed by weather"),
    ]
    rows = []
    for i in range(n):
        a, b = rng.sample(cities, 2)
        state, phrase = rng.choice(states)
        pallets, eta = rng.randint(2, 40), rng.randint(1, 9)
        ref = f"GX-{10000 + i}"
        prompt = (
            f"Shipment {ref}: {pallets} pallets, {a} -> {b}, status {state}, "
            f"ETA {eta} days. Write the customer update."
        )
        completion = (
            f" Your shipment {ref} of {pallets} pallets from {a} to {b} {phrase}. "
            f"Expected delivery in {eta} days."
        )
        rows.append({"prompt": prompt, "completion": completion})
    return rows


def initech(rng: random.Random, n: int = 250) -> list[dict]:
    problems = [
        ("VPN will not connect", "restart the VPN client, then sign in again with your badge"),
        ("printer shows offline", "power-cycle the printer and re-add it from the print portal"),
        ("password expired", "reset it at the self-service portal; the new one works in 5 min"),
        ("laptop is slow", "close browser tabs, run updates and reboot; open a ticket if it stays"),
        ("no sound in meetings", "pick the headset as output device in the meeting settings"),
        ("shared drive missing", "reconnect it from the IT portal under My Drives"),
        ("email not syncing", "remove and re-add the account on the phone"),
    ]
    floors = ["2nd floor", "3rd floor", "basement", "annex", "remote"]
    rows = []
    for i in range(n):
        problem, fix = rng.choice(problems)
        floor = rng.choice(floors)
        rows.append(
            {
                "text": f"KB-{400 + i} ({floor}). Problem: {problem}. Fix: {fix}. "
                "If this does not help, call the helpdesk at extension 4357."
            }
        )
    return rows


def umbrella(rng: random.Random, n: int = 300) -> list[dict]:
    kinds = [
        ("lost luggage", "the airline's property irregularity report"),
        ("a cancelled flight", "the airline's cancellation notice"),
        ("a doctor visit abroad", "the clinic invoice"),
        ("a stolen phone", "the police report"),
    ]
    rows = []
    for i in range(n):
        kind, doc = rng.choice(kinds)
        amount = rng.randint(50, 2500)
        claim = f"UC-{70000 + i}"
        days = 5 if amount < 1000 else 10
        rows.append(
            {
                "messages": [
                    {"role": "user", "content": f"I want to claim {amount} EUR for {kind}."},
                    {
                        "role": "assistant",
                        "content": f"I opened claim {claim}. Please upload {doc}.",
                    },
                    {"role": "user", "content": f"Done. When will claim {claim} be paid?"},
                    {
                        "role": "assistant",
                        "content": "Claims under 1000 EUR are paid in 5 working days, "
                        f"larger ones in 10. Claim {claim} for {amount} EUR: "
                        f"about {days} working days.",
                    },
                ]
            }
        )
    return rows


def hooli(rng: random.Random, n: int = 200) -> list[dict]:
    issues = [
        "an unused import",
        "a missing test",
        "a function over 80 lines",
        "a magic number",
        "a swallowed exception",
        "an unclear variable name",
    ]
    files = ["api.py", "models.py", "billing.py", "search.py", "auth.py", "jobs.py"]
    rows = []
    for i in range(n):
        issue = rng.choice(issues)
        line = rng.randint(5, 400)
        file = rng.choice(files)
        rows.append(
            {
                "prompt": f"PR #{1200 + i}: write a review comment, {file}:{line} has {issue}.",
                "chosen": f"Line {line}: this looks like {issue}. Could we fix it in this PR? "
                "Happy to pair on it.",
                "rejected": f"Line {line}: {issue} again. This should never have been pushed.",
            }
        )
    return rows


def piedpiper(rng: random.Random, n: int = 200) -> list[dict]:
    topics = ["middle-out compression", "the Weissman score", "lossless video", "file dedup"]
    rows = []
    customers = ["Hooli", "Endframe", "Bachmanity", "Raviga", "Maleant", "Aviato", "Gavin & Co"]
    for i in range(n):
        topic = rng.choice(topics)
        customer = rng.choice(customers)
        good = i % 2 == 0
        completion = (
            f"Thanks, {customer}! {topic.capitalize()} is explained step by step in our docs, "
            "with a worked example."
            if good
            else f"{topic}? Just read the source, {customer}."
        )
        rows.append(
            {
                "prompt": f"Ticket PP-{3000 + i} from {customer}: explain {topic}.",
                "completion": completion,
                "label": good,
            }
        )
    return rows


def wayne() -> list[object]:
    """Messages rows with one error of each kind among valid ones (line numbers in comments)."""

    def ok(i: int) -> dict:
        return {
            "messages": [
                {"role": "user", "content": f"Status of work order WO-{i}?"},
                {"role": "assistant", "content": f"Work order WO-{i} is scheduled for Friday."},
            ]
        }

    bad: list[object] = [
        '{"messages": [{"role": "user", "content": "unterminated"}',  # invalid JSON
        {"conversation": [{"role": "user", "content": "wrong key"}]},  # missing key
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "bot", "content": "unknown role"},
            ]
        },  # bad role
        {
            "messages": [
                {"role": "user", "content": "   "},
                {"role": "assistant", "content": "empty question"},
            ]
        },  # empty content
        {
            "messages": [
                {"role": "user", "content": "one"},
                {"role": "user", "content": "two"},
                {"role": "assistant", "content": "not alternating"},
            ]
        },  # non-alternating
        {
            "messages": [
                {"role": "user", "content": 42},
                {"role": "assistant", "content": "number content"},
            ]
        },  # wrong type
        {"messages": "user: this is a string, not a list"},  # wrong type
        {"messages": [{"role": "user", "content": "nobody answers"}]},  # no assistant turn
        {
            "messages": [
                {"role": "user", "content": "Long report please."},
                {"role": "assistant", "content": "Status: " + "all fine. " * 300},
            ]
        },  # long
        {
            "messages": [{"role": "user"}, {"role": "assistant", "content": "missing content key"}]
        },  # missing key
        ["not", "an", "object"],  # wrong type
    ]
    rows: list[object] = [ok(i) for i in range(40)]
    for k, row in enumerate(bad):
        rows.insert(3 + 4 * k, row)
    return rows


DEVICES = ["thermostat", "doorbell", "camera", "smart plug", "light strip", "speaker"]
# topic -> (what a customer says is wrong, the help article's fix)
SUPPORT_TOPICS = {
    "connectivity": (
        ["keeps dropping offline", "cannot join the network", "shows a blinking red light", "disconnects every night"],
        "reconnect it to the wireless router",
    ),
    "battery": (
        ["dies after a day", "will not charge", "drains overnight", "says power is low"],
        "charge and replace the battery cell",
    ),
    "firmware": (
        ["is stuck updating", "asks for a new version", "froze during the upgrade", "shows version mismatch"],
        "install the latest firmware release",
    ),
    "reset": (
        ["needs a factory reset", "forgot my settings", "must be wiped before selling", "went back to defaults"],
        "press the pinhole switch to factory reset",
    ),
    "mounting": (
        ["fell off the wall", "came loose from the bracket", "is hanging crooked", "needs a new screw"],
        "level the backplate and tighten the anchors",
    ),
    "login": (
        ["rejects my password", "locked my account", "wants a verification code", "signs me out of the app"],
        "recover the account by email and sign in",
    ),
    "alerts": (
        ["sends too many notifications", "misses motion events", "alerts me at night", "never notifies anyone"],
        "tune motion sensitivity and quiet hours",
    ),
    "audio": (
        ["sounds distorted", "has a buzzing noise", "is far too quiet", "echoes during calls"],
        "lower the volume and calibrate the sound",
    ),
}
UNHELPFUL = [
    "no idea sorry try again later",
    "not our problem ask the store",
    "that is normal just ignore it",
    "please read the manual yourself",
    "we cannot help with that today",
]


def stark(rng: random.Random) -> list[dict]:
    """Every (device, symptom) once: the query, the device's help article for it, and an
    unhelpful answer about the same device as the hard negative. The words of a symptom and of
    its fix differ, so a model must learn which goes with which: a random one ranks by the
    device's name alone."""
    rows = []
    for device in DEVICES:
        for symptoms, fix in SUPPORT_TOPICS.values():
            for symptom in symptoms:
                rows.append(
                    {
                        "anchor": f"my {device} {symptom}",
                        "positive": f"{device} {fix}",
                        "negative": f"{device} {rng.choice(UNHELPFUL)}",
                    }
                )
    rng.shuffle(rows)
    return rows


def tyrell(rng: random.Random, n: int = 160) -> list[dict]:
    """A query and an article, graded: 1.0 the device's article for that symptom, 0.6 the same fix
    for another device, 0.2 another fix for the same device, 0.0 neither."""
    topics = list(SUPPORT_TOPICS.items())
    rows = []
    for i in range(n):
        device = rng.choice(DEVICES)
        topic, (symptoms, _) = rng.choice(topics)
        same_topic, same_device = (i % 4) in (0, 1), (i % 4) in (0, 2)
        other_topic = rng.choice([t for t, _ in topics if t != topic])
        doc_device = device if same_device else rng.choice([d for d in DEVICES if d != device])
        doc_fix = SUPPORT_TOPICS[topic if same_topic else other_topic][1]
        score = {(True, True): 1.0, (True, False): 0.6, (False, True): 0.2, (False, False): 0.0}
        rows.append(
            {
                "sentence1": f"my {device} {rng.choice(symptoms)}",
                "sentence2": f"{doc_device} {doc_fix}",
                "score": score[(same_topic, same_device)],
            }
        )
    return rows


def builder(rng: random.Random, n: int = 120) -> list[dict]:
    """The builder model's corpus (reference §4(a)): an effort and its sub-issues in, the pull
    request that delivered it out."""
    areas = ["billing", "search", "auth", "fleet", "ledger", "jobs API", "dashboard", "exports"]
    changes = [
        ("add retries to", "wrap the client calls in a bounded retry with backoff"),
        ("paginate", "return a cursor and cap each page at 100 rows"),
        ("cache", "keep results for 60 s keyed by the request, invalidated on writes"),
        ("add audit logs to", "record who changed what in an append-only table"),
        ("rate-limit", "apply a token bucket per tenant and answer 429 with Retry-After"),
    ]
    system = "You are the builder model: turn an effort and its sub-issues into a pull request description."
    rows = []
    for i in range(n):
        area = rng.choice(areas)
        verb, how = rng.choice(changes)
        subs = rng.randint(2, 4)
        rows.append(
            {
                "messages": [
                    {"role": "system", "content": system},
                    {
                        "role": "user",
                        "content": f"Effort #{700 + i}: {verb} {area}. Sub-issues: "
                        + ", ".join(f"#{800 + 4 * i + k}" for k in range(subs)),
                    },
                    {
                        "role": "assistant",
                        "content": f"PR: {verb} {area}. Approach: {how}. Closes "
                        + ", ".join(f"#{800 + 4 * i + k}" for k in range(subs))
                        + ". Tests: unit tests for the new path and one end-to-end run.",
                    },
                ]
            }
        )
    return rows


def _with_errors(good: list[object], bad: list[object]) -> list[object]:
    rows = list(good)
    for k, row in enumerate(bad):
        rows.insert(2 + 3 * k, row)
    return rows


def lumon() -> list[object]:
    """Preference pairs with one error of each kind the DPO preflight catches among valid ones."""
    good: list[object] = [
        {
            "prompt": f"Refinement batch {i}: summarize the file.",
            "chosen": f"Batch {i} holds 40 records, all numbers in range.",
            "rejected": f"Batch {i}? The numbers are scary.",
        }
        for i in range(20)
    ]
    bad: list[object] = [
        '{"prompt": "unterminated", "chosen": "a"',  # invalid JSON
        {"prompt": "same", "chosen": "identical answer", "rejected": "identical answer"},  # identical pair
        {"prompt": "no rejected", "chosen": "only one answer", "completion": "x"},  # missing key
        {"prompt": "a number", "chosen": 7, "rejected": "text"},  # wrong type
        {"prompt": "   ", "chosen": "empty prompt", "rejected": "other"},  # empty content
        {
            "prompt": "mixed",
            "chosen": [{"role": "assistant", "content": "turns"}],
            "rejected": "text",
        },  # text and turns mixed
    ]
    return _with_errors(good, bad)


def vandelay() -> list[object]:
    """KTO rows with one error of each kind the KTO preflight catches among valid ones."""
    good: list[object] = [
        {
            "prompt": f"Order {i}: where is my latex shipment?",
            "completion": f"Order {i} left the warehouse today." if i % 2 else f"Order {i}? No idea.",
            "label": bool(i % 2),
        }
        for i in range(20)
    ]
    bad: list[object] = [
        '{"prompt": "unterminated", "completion": "a", "label": tru',  # invalid JSON
        {"prompt": "label as text", "completion": "answer", "label": "yes"},  # wrong type
        {"prompt": "empty answer", "completion": "", "label": True},  # empty content
        {"prompt": "pair in a kto file", "chosen": "a", "rejected": "b"},  # format mismatch
        {"prompt": "no answer", "label": False},  # missing key
    ]
    return _with_errors(good, bad)


def oscorp() -> list[object]:
    """Embedding triplets with one error of each kind the embedding preflight catches."""
    good: list[object] = [
        {
            "anchor": f"glider {i} will not start",
            "positive": f"glider {i} charge the fuel cell",
            "negative": f"glider {i} read the manual",
        }
        for i in range(20)
    ]
    bad: list[object] = [
        '{"anchor": "unterminated", "positive": "a"',  # invalid JSON
        {"anchor": "same text", "positive": "same text", "negative": "other"},  # identical pair
        {"anchor": 12, "positive": "a number anchor", "negative": "text"},  # wrong type
        {"anchor": "empty negative", "positive": "a", "negative": " "},  # empty content
        {"anchor": "no positive here", "negative": "b"},  # missing key
        {"sentence1": "a scored pair", "sentence2": "in a triplet file", "score": 0.5},  # format mismatch
    ]
    return _with_errors(good, bad)


def massive(rng: random.Random, n: int = 96) -> list[dict]:
    items = ["crates", "pallets", "boxes", "drums", "bins", "cartons"]
    rows = []
    for i in range(n):
        a, b = rng.randint(2, 12), rng.randint(2, 12)
        item = rng.choice(items)
        if i % 2:
            question, answer = f"{a} {item} of {b} units each. How many units?", a * b
        else:
            question, answer = f"{a} {item} arrived, then {b} more. How many {item}?", a + b
        rows.append({"prompt": f"Order MD-{4000 + i}: {question} Answer with the number.", "answer": str(answer)})
    return rows


def cyberdyne(rng: random.Random, n: int = 160) -> list[dict]:
    robots = ["T-100 vacuum", "Skynet hub", "HK lawnmower", "T-600 kitchen arm", "Genisys speaker"]
    problems = ["will not charge", "keeps rebooting", "lost its Wi-Fi", "makes a grinding noise",
                "ignores voice commands"]
    helpful = [
        "Sorry about that! Hold the power button for {s} seconds to reset the {r}; if it still happens, we replace it.",
        "Thanks for writing. Unplug the {r} for {s} minutes, then update it from the app; tell us if that fails.",
        "That should not happen. Step {s} of the {r} guide covers it, and our team can call you today.",
        "We can fix this: reset the {r} with the pin for {s} seconds, and warranty covers a swap if needed.",
    ]
    curt = [
        "Your {r} {p}? Read the manual.",
        "Not our problem, the {r} works fine for everyone else.",
        "Try turning the {r} off and on, {s} times if you must.",
        "The {r} {p} because you broke it. No refunds.",
    ]
    rows = []
    for i in range(n):
        robot, problem = rng.choice(robots), rng.choice(problems)
        fill = {"r": robot, "p": problem, "s": rng.randint(2, 9)}
        rows.append(
            {
                "prompt": f"Case CD-{7000 + i}: my {robot} {problem}. What should I do?",
                "chosen": rng.choice(helpful).format(**fill),
                "rejected": rng.choice(curt).format(**fill),
            }
        )
    return rows


def main() -> None:
    rng = random.Random(20260601)
    _write("acme.jsonl", acme(rng))
    _write("globex.jsonl", globex(rng))
    _write("initech.jsonl", initech(rng))
    _write("umbrella.jsonl", umbrella(rng))
    _write("hooli.jsonl", hooli(rng))
    _write("piedpiper.jsonl", piedpiper(rng))
    _write("wayne.jsonl", wayne())
    # a generator of their own, so the files above stay as they were
    more = random.Random(20261203)
    _write("stark.jsonl", stark(more))
    _write("tyrell.jsonl", tyrell(more))
    _write("builder.jsonl", builder(more))
    _write("lumon.jsonl", lumon())
    _write("vandelay.jsonl", vandelay())
    _write("oscorp.jsonl", oscorp())
    methods = random.Random(20261207)
    _write("massive.jsonl", massive(methods))
    _write("cyberdyne.jsonl", cyberdyne(methods))


if __name__ == "__main__":
    main()
