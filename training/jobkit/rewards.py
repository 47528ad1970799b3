"""What GRPO and reward modelling add to the shared recipe (`grpo_lora.py`, `reward_lora.py`): the
rewards a fleet file can name, and the verdict rules that judge a reward and an accuracy.

GRPO rewards (`--rewards`, comma-separated; each is a TRL reward function, logged as
`rewards/<name>/mean`, and the run's `reward` is their sum):

* `exact`: 1.0 when the completion, stripped and case-folded, is the row's `answer`, else 0.
* `numeric`: 1.0 when the first number in the completion equals the row's `answer` as a number
  (to 1e-6 relative), else 0.
* `format`: the completion is the answer alone: 1.0 when its first line is one number and
  nothing else, 0.5 when it starts with a number, else 0 (a format check for number answers).
* `<file>.py`: a Python module shipped with the tenant's data (beside a local dataset file, or a
  file of the Hub dataset repo), whose `reward(prompts, completions, **columns)` returns one float
  per completion; `columns` are the row's other fields (`answer`...), as TRL passes them.

Verdicts (after the shared rules: NaN, no loss, a learning rate of 0):

* GRPO (:class:`RewardMonitor`): `no_reward` (none logged); `reward_flat` when the reward never
  moved (the same value on every logged step: every completion scored alike, so there was
  nothing to learn from) or did not rise (the mean of the last fifth of the logged steps is not
  more than `--min-reward-gain` above the mean of the first fifth). GRPO's loss is not judged (no
  flat loss, divergence or stall): it starts at 0 and follows the advantages, not the learning.
* Reward modelling (:class:`AccuracyMonitor`): `at_chance` when the last held-out pairwise
  accuracy (the share of held-out pairs whose chosen answer scores above the rejected one) is not
  above chance, 0.5, by more than two standard errors (2 x sqrt(0.25 / pairs)); the loss must
  fall as for DPO.

Standard library only at import time.
"""

from __future__ import annotations

import importlib.util
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobkit.run import LossMonitor, Refusal, fmt_loss

BUILTIN = ("exact", "numeric", "format")
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
CHANCE = 0.5  # a reward model that guesses orders half the pairs right


def text_of(completion: Any) -> str:
    """A completion's text: a string, or the content of its turns (conversational prompts)."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(t.get("content", "")) for t in completion if isinstance(t, dict))
    return str(completion)


def as_number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def exact(prompts: list[Any], completions: list[Any], answer: list[Any], **_: Any) -> list[float]:
    return [float(" ".join(text_of(c).split()).casefold() == " ".join(str(a).split()).casefold())
            for c, a in zip(completions, answer, strict=True)]


def numeric(prompts: list[Any], completions: list[Any], answer: list[Any], **_: Any) -> list[float]:
    out = []
    for c, a in zip(completions, answer, strict=True):
        found = NUMBER.search(text_of(c))
        got, want = (as_number(found.group()) if found else None), as_number(str(a))
        out.append(float(got is not None and want is not None and abs(got - want) <= 1e-6 * max(1.0, abs(want))))
    return out


def format(prompts: list[Any], completions: list[Any], **_: Any) -> list[float]:  # noqa: A001 - the reward's name
    out = []
    for c in completions:
        first = (text_of(c).strip().splitlines() or [""])[0].strip()
        if NUMBER.fullmatch(first):
            out.append(1.0)
        else:
            out.append(0.5 if NUMBER.match(first) else 0.0)
    return out


FUNCTIONS: dict[str, Callable[..., list[float]]] = {"exact": exact, "numeric": numeric, "format": format}


def parse(text: str) -> list[str]:
    """`--rewards` as a list; refused (`bad_arguments`) when empty or naming an unknown reward."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise Refusal("bad_arguments",
                      f"--rewards names no reward: give one or more of {', '.join(BUILTIN)} or a .py file")
    for name in names:
        if name not in BUILTIN and not name.endswith(".py"):
            raise Refusal("bad_arguments", f"--rewards: unknown reward {name!r}; use {', '.join(BUILTIN)} "
                                           "or a Python module shipped with the dataset (name.py)")
    if len(set(names)) != len(names):
        raise Refusal("bad_arguments", f"--rewards names a reward twice: {text}")
    return names


def needs_answer(names: list[str]) -> bool:
    return any(n in ("exact", "numeric") for n in names)


def module_path(name: str, dataset: str, local: bool) -> Path:
    """Where a reward module shipped with the data is: beside a local dataset file, or a file of
    the Hub dataset repo (downloaded). Refused `bad_reward` when it is not there."""
    if Path(name).name != name:
        raise Refusal("bad_reward", f"reward module {name!r}: name a file beside the dataset, not a path")
    if local:
        path = Path(dataset).expanduser().resolve().parent / name
        if not path.is_file():
            raise Refusal("bad_reward", f"reward module {name} not found beside the dataset ({path})")
        return path
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(dataset, name, repo_type="dataset"))
    except Exception as e:  # no file, no repo, no network
        raise Refusal("bad_reward", f"reward module {name} not found in the dataset repo {dataset}: "
                                    f"{type(e).__name__}") from None


def load_module(path: Path) -> Callable[..., list[float]]:
    """The module's `reward` function, named after the file (`rewards/<stem>/mean` in the logs)."""
    spec = importlib.util.spec_from_file_location(f"tenant_reward_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise Refusal("bad_reward", f"reward module {path.name} cannot be loaded")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise Refusal("bad_reward", f"reward module {path.name} fails to import: {type(e).__name__}: {e}") from None
    func = getattr(module, "reward", None)
    if not callable(func):
        raise Refusal("bad_reward", f"reward module {path.name} has no reward(prompts, completions, **columns)")

    def call(prompts: list[Any], completions: list[Any], **columns: Any) -> list[float]:
        return [float(v) for v in func(prompts=prompts, completions=[text_of(c) for c in completions], **columns)]

    call.__name__ = path.stem
    return call


def resolve(names: list[str], dataset: str, local: bool) -> list[Callable[..., list[float]]]:
    """The reward functions of `--rewards`, each checked: a module must import and define `reward`."""
    return [FUNCTIONS[n] if n in FUNCTIONS else load_module(module_path(n, dataset, local)) for n in names]


# ----------------------------------------------------------------------------- verdicts


@dataclass
class RewardMonitor(LossMonitor):
    """GRPO's verdict: the reward (logged with the loss each step) must rise; see the module."""

    min_reward_gain: float = 0.01

    def __post_init__(self) -> None:
        self.metric_name = "reward"
        self.metric_key = "reward"
        # GRPO's loss is no measure of learning (it starts at 0 and follows the advantages): no
        # flat-loss, divergence or stall judgement of it
        self.min_loss_drop = 0.0
        self.divergence_factor = math.inf
        self.stall_patience = 1 << 30

    def judge_metric(self) -> str | None:
        values = [v for _, v in self.metrics]
        if not values:
            return "no_reward: no reward was logged"
        if max(values) - min(values) == 0:
            return (f"reward_flat: the reward was {fmt_loss(values[0])} on every logged step ({len(values)} steps): "
                    "every completion scored the same, so there was nothing to learn from; check the rewards "
                    "against the answers")
        k = max(1, len(values) // 5)
        start, end = sum(values[:k]) / k, sum(values[-k:]) / k
        if not end - start > self.min_reward_gain:
            return (f"reward_flat: the reward went from {fmt_loss(start)} (mean of the first {k} logged steps) to "
                    f"{fmt_loss(end)} (mean of the last {k}); a run that learns raises it by more than "
                    f"{self.min_reward_gain:g}")
        return None

    def verdict(self) -> tuple[bool, str]:
        zero_lr = self.learning_rates and all(lr == 0 for _, lr in self.learning_rates)
        if self.nan_step is None and self.losses and not zero_lr and (why := self.judge_metric()):
            return False, why  # before zero_grad: a reward that never moved gives no gradient either
        return super().verdict()

    def resume(self, history: list[dict[str, Any]]) -> int:
        for entry in history:
            if entry.get("reward") is not None and "step" in entry:
                self.observe_metric(int(entry["step"]), float(entry["reward"]))
        return super().resume(history)


@dataclass
class AccuracyMonitor(LossMonitor):
    """A reward model's verdict: its held-out pairwise accuracy must beat chance; see the module."""

    eval_pairs: int = 0

    def __post_init__(self) -> None:
        self.metric_name = "accuracy"

    def needed(self) -> float:
        return CHANCE + 2.0 * math.sqrt(CHANCE * (1 - CHANCE) / max(1, self.eval_pairs))

    def judge_metric(self) -> str | None:
        if not self.metrics:
            return "no_metric: the held-out accuracy was never evaluated"
        last = self.metrics[-1][1]
        if not last > self.needed():
            return (f"at_chance: the held-out pairwise accuracy is {last:.3f} on {self.eval_pairs} pairs "
                    f"(step {self.metrics[-1][0]}), within two standard errors of chance ({CHANCE:g}; a reward "
                    f"model that learned scores above {self.needed():.3f})")
        return None
