"""The massive tenant's own GRPO reward, shipped beside its data (`massive.jsonl`).

`grpo_lora.py --rewards numeric,massive_rewards.py` loads this file and calls `reward` with the
prompts, the completions (text) and the rows' other columns (`answer`), as TRL calls a reward
function; it returns one float per completion. Partial credit, so that a model still far from the
right answer learns which way it is: half for a completion made of digits (an answer, not prose),
half for a first number close to the answer.
"""

import re

NUMBER = re.compile(r"-?\d+")


def reward(prompts, completions, answer, **columns):
    scores = []
    for text, want in zip(completions, answer, strict=True):
        body = text.strip()
        digits = sum(ch.isdigit() for ch in body) / max(1, len(body))
        found = NUMBER.search(body)
        close = 0.0
        if found:
            want_n = float(want)
            close = max(0.0, 1.0 - abs(float(found.group()) - want_n) / max(1.0, abs(want_n)))
        scores.append(0.5 * digits + 0.5 * close)
    return scores
