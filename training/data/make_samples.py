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


def main() -> None:
    rng = random.Random(20260601)
    _write("acme.jsonl", acme(rng))
    _write("globex.jsonl", globex(rng))
    _write("initech.jsonl", initech(rng))
    _write("umbrella.jsonl", umbrella(rng))
    _write("hooli.jsonl", hooli(rng))
    _write("piedpiper.jsonl", piedpiper(rng))
    _write("wayne.jsonl", wayne())


if __name__ == "__main__":
    main()
