"""Prices, plans and cost-model constants: the numbers the console is built on, with their source.

Every number here comes from the reference document "HF Jobs — training mechanics + cost model"
(section 3, live `hf jobs hardware` read on 2026-06-27; section 4 for the heuristic). When a
backend answers `list_jobs_hardware`, :func:`price_book_from_hardware` builds a live price book
that replaces these shipped prices; :class:`PriceBook.source` says which one is in use.

This module is plain data: no UI, no network.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

PRICES_READ_ON = "2026-06-27"
PRICES_SOURCE = "reference §3: live `hf jobs hardware`, read 2026-06-27"
HEURISTIC_SOURCE = "reference §4: estimate_cost.py heuristic"


@dataclass(frozen=True)
class Flavor:
    """One HF Jobs hardware flavor."""

    name: str
    kind: str  # "gpu" or "cpu"
    gpu: str  # e.g. "1x A10G"; "" for CPU flavors
    gpu_memory_gb: int  # 0 for CPU flavors
    price_per_hour: float  # USD
    fits: str  # the reference's "Fits (LoRA SFT)" guidance
    # Largest model (billions of parameters) the "fits" guidance admits for LoRA SFT; 0 = not for training.
    max_model_b: float = 0.0
    multiplier: float | None = None
    """The heuristic's speed factor when it is not the reference's or an assumed one by name (a
    flavor only the live hardware list has: from its GPU family); None: `multiplier_for(name)`."""
    multiplier_source: str = ""
    note: str = ""
    """Where this flavor's figures come from when a live price book could not give them all (a
    shipped price HF no longer lists; guidance derived for a flavor only HF lists)."""

    @property
    def price_per_minute(self) -> float:
        return self.price_per_hour / 60.0

    @property
    def is_gpu(self) -> bool:
        return self.kind == "gpu"


def _gpu(name: str, gpu: str, mem: int, price: float, fits: str, max_b: float) -> Flavor:
    return Flavor(name, "gpu", gpu, mem, price, fits, max_b)


def _cpu(name: str, price: float, fits: str) -> Flavor:
    return Flavor(name, "cpu", "", 0, price, fits, 0.0)


# Reference §3 "GPU flavors → $/hr → model-size fit" and the CPU flavors line, in its order.
SHIPPED_FLAVORS: tuple[Flavor, ...] = (
    _gpu("t4-small", "1x T4", 16, 0.40, "<1B demos / tiny adapters", 1),
    _gpu("t4-medium", "1x T4", 16, 0.60, "1-3B small jobs", 3),
    _gpu("l4x1", "1x L4", 24, 0.80, "1-7B LoRA - best $/perf for tenant adapters", 7),
    _gpu("a10g-small", "1x A10G", 24, 1.00, "1-7B dev", 7),
    _gpu("a10g-large", "1x A10G", 24, 1.50, "3-13B LoRA (workhorse)", 13),
    _gpu("l40sx1", "1x L40S", 48, 1.80, "7-13B, longer context", 13),
    _gpu("a100-large", "1x A100", 80, 2.50, "7-34B LoRA / builder model", 34),
    _gpu("rtx-pro-6000", "1x RTX PRO 6000", 96, 2.75, "13-34B", 34),
    _gpu("a10g-largex2", "2x A10G", 48, 3.00, "13B multi-GPU", 13),
    _gpu("l4x4", "4x L4", 96, 3.80, "multi-GPU mid", 34),
    _gpu("a10g-largex4", "4x A10G", 96, 5.00, "13B+", 34),
    _gpu("h200", "1x H200", 141, 5.00, "30-70B", 70),
    _gpu("l40sx4", "4x L40S", 192, 8.30, "70B", 70),
    _gpu("a100x4", "4x A100", 320, 10.00, "70B full / 100B+ LoRA", 120),
    _gpu("h200x2", "2x H200", 282, 10.00, "70B+", 120),
    _gpu("rtx-pro-6000x4", "4x RTX PRO 6000", 384, 11.00, "large", 120),
    _gpu("a100x8", "8x A100", 640, 20.00, "very large / multi-node", 200),
    _gpu("h200x4", "4x H200", 564, 20.00, "very large / multi-node", 200),
    _gpu("rtx-pro-6000x8", "8x RTX PRO 6000", 768, 22.00, "very large", 200),
    _gpu("l40sx8", "8x L40S", 384, 23.50, "very large", 200),
    _gpu("h200x8", "8x H200", 1128, 40.00, "frontier", 400),
    _cpu("cpu-basic", 0.01, "dataset prep, dataset validation"),
    _cpu("cpu-upgrade", 0.03, "dataset prep, dataset validation"),
    _cpu("cpu-xl", 1.00, "dataset prep, GGUF"),
    _cpu("cpu-performance", 1.90, "dataset prep, GGUF"),
)

@dataclass(frozen=True)
class FlavorSpec:
    """What HF publishes of one flavor's machine besides its GPUs and price."""

    pretty_name: str
    """The flavor's name in `list_jobs_hardware` (`prettyName`)."""
    vcpu: int
    ram_gb: int
    storage_gb: int
    """Ephemeral storage (the job's disk), in GB."""


# HF's published machine figures per flavor, from the Jobs pricing tables ("CPU" and "GPU": CPU,
# Memory, Ephemeral Storage) of huggingface/hub-docs docs/hub/jobs-pricing.md
# (https://huggingface.co/docs/hub/jobs-pricing), whose prices match reference §3. The pretty names
# follow HF's `list_jobs_hardware` answers in tests/contract/hf_shapes.py ("CPU Basic", "Nvidia L4 -
# x1", "Nvidia RTX PRO 6000 - x2", "Nvidia B200"): the GPU's name, then the flavor's suffix. Where
# that file (HF's live answer) gives a figure it is used: cpu-basic's 20 GB of ephemeral storage,
# where the docs say 50 GB. Every other figure agrees between the two.
# A flavor no source gives is left out (its hardware entry then has no cpu/ram, as HF's would not).
FLAVOR_SPECS: dict[str, FlavorSpec] = {
    "cpu-basic": FlavorSpec("CPU Basic", 2, 16, 20),
    "cpu-upgrade": FlavorSpec("CPU Upgrade", 8, 32, 50),
    "cpu-xl": FlavorSpec("CPU XL", 16, 124, 1000),
    "cpu-performance": FlavorSpec("CPU Performance", 32, 256, 1024),
    "t4-small": FlavorSpec("Nvidia T4 - small", 4, 15, 50),
    "t4-medium": FlavorSpec("Nvidia T4 - medium", 8, 30, 100),
    "l4x1": FlavorSpec("Nvidia L4 - x1", 8, 30, 400),
    "l4x4": FlavorSpec("Nvidia L4 - x4", 48, 186, 3200),
    "l40sx1": FlavorSpec("Nvidia L40S - x1", 8, 62, 380),
    "l40sx4": FlavorSpec("Nvidia L40S - x4", 48, 382, 3200),
    "l40sx8": FlavorSpec("Nvidia L40S - x8", 192, 1534, 6500),
    "a10g-small": FlavorSpec("Nvidia A10G - small", 4, 15, 110),
    "a10g-large": FlavorSpec("Nvidia A10G - large", 12, 46, 200),
    "a10g-largex2": FlavorSpec("Nvidia A10G - largex2", 24, 92, 1000),
    "a10g-largex4": FlavorSpec("Nvidia A10G - largex4", 48, 184, 2000),
    "a100-large": FlavorSpec("Nvidia A100 - large", 12, 142, 1000),
    "a100x4": FlavorSpec("Nvidia A100 - x4", 48, 568, 4000),
    "a100x8": FlavorSpec("Nvidia A100 - x8", 96, 1136, 8000),
    "h200": FlavorSpec("Nvidia H200", 23, 256, 3000),
    "h200x2": FlavorSpec("Nvidia H200 - x2", 46, 512, 6000),
    "h200x4": FlavorSpec("Nvidia H200 - x4", 92, 1024, 12000),
    "h200x8": FlavorSpec("Nvidia H200 - x8", 184, 2048, 24000),
    "rtx-pro-6000": FlavorSpec("Nvidia RTX PRO 6000", 23, 256, 475),
    "rtx-pro-6000x4": FlavorSpec("Nvidia RTX PRO 6000 - x4", 92, 1024, 1900),
    "rtx-pro-6000x8": FlavorSpec("Nvidia RTX PRO 6000 - x8", 184, 2048, 3800),
}


# Reference §4: "multipliers ≈ a100-large 0.7, a10g-large 1.0, l4x1 1.2, a10g-small 1.3, t4-small 2.0".
REFERENCE_MULTIPLIERS: dict[str, float] = {
    "a100-large": 0.7,
    "a10g-large": 1.0,
    "l4x1": 1.2,
    "a10g-small": 1.3,
    "t4-small": 2.0,
}

# The reference gives no multiplier for the other GPU flavors. These are assumptions, stated as such:
# a flavor built on the same GPU as a reference flavor takes its multiplier (the heuristic does not
# model multi-GPU speed-ups), and the newer data-centre GPUs (L40S, RTX PRO 6000, H200) take the
# A100's 0.7, which over-estimates their time (and so their cost) rather than under-estimating it.
# Calibration from real runs replaces all of them.
ASSUMED_MULTIPLIERS: dict[str, tuple[float, str]] = {
    "t4-medium": (2.0, "same GPU as t4-small"),
    "a10g-largex2": (1.0, "same GPU as a10g-large"),
    "a10g-largex4": (1.0, "same GPU as a10g-large"),
    "l4x4": (1.2, "same GPU as l4x1"),
    "a100x4": (0.7, "same GPU as a100-large"),
    "a100x8": (0.7, "same GPU as a100-large"),
    "l40sx1": (0.7, "assumed no slower than a100-large"),
    "l40sx4": (0.7, "assumed no slower than a100-large"),
    "l40sx8": (0.7, "assumed no slower than a100-large"),
    "rtx-pro-6000": (0.7, "assumed no slower than a100-large"),
    "rtx-pro-6000x4": (0.7, "assumed no slower than a100-large"),
    "rtx-pro-6000x8": (0.7, "assumed no slower than a100-large"),
    "h200": (0.7, "assumed no slower than a100-large"),
    "h200x2": (0.7, "assumed no slower than a100-large"),
    "h200x4": (0.7, "assumed no slower than a100-large"),
    "h200x8": (0.7, "assumed no slower than a100-large"),
}

# Reference §4: "0.1h = base for a 1B model per 1k examples on a10g-large".
BASE_HOURS_PER_B_PER_1K_EXAMPLES = 0.1
# Reference §2: Unsloth is "~2× faster".
UNSLOTH_SPEEDUP = 2.0
# Reference §2: "The skill mandates LoRA for models >7B": a full fine-tune above this is refused.
LORA_REQUIRED_ABOVE_B = 7.0
# Reference §1 and the training reference: "Add 20–30% buffer"; "estimated training time × 1.3".
DEFAULT_TIMEOUT_BUFFER = 1.3
# What happens around the training itself inside a job, which the §4 heuristic does not count:
# the `uv run` environment install (about 48 s measured with a cold cache: torch alone is several
# GB), downloading the base model and the dataset, and the final Hub push. Added to the estimate
# before the buffer, so a short run's timeout is never shorter than its set-up.
DEFAULT_TIMEOUT_OVERHEAD_S = 300
# Reference §1: "Default 30 min — too short for real training".
HF_DEFAULT_TIMEOUT_SECONDS = 30 * 60
HF_MAX_TIMEOUT_SECONDS = 7 * 24 * 3600
"""The longest timeout a job may ask for (a week; longer is certainly a mistake), and so the longest
an on-call threshold on a running job may be."""
# Reference §3: "Exposed ports add a flat $0.01/hr."
EXPOSED_PORT_PRICE_PER_HOUR = 0.01
# Reference §4 assumption: '"Weekly" = 4.3 runs/month' — the console computes runs/month from the
# cron expression itself; this is kept only to show how the reference rounded.
REFERENCE_WEEKLY_RUNS_PER_MONTH = 4.3


@dataclass(frozen=True)
class Plan:
    """An HF subscription plan (reference §3 "Paid-plan requirement")."""

    name: str
    monthly_usd: float  # per seat for team / enterprise, flat for pro
    per_seat: bool
    can_run_jobs: bool
    notes: str


PLANS: dict[str, Plan] = {
    "free": Plan("free", 0.0, False, False, "No Jobs (no positive balance / credits)."),
    "pro": Plan("pro", 9.0, False, True, "Personal; unlocks Jobs pay-per-minute."),
    "team": Plan("team", 20.0, True, True, "Org-level; bill Jobs to the org namespace."),
    "enterprise": Plan(
        "enterprise", 50.0, True, True, "Resource Groups for per-group cost attribution."
    ),
}
PLANS_READ_ON = "2026-06"


def plan_floor_usd(plan: str, seats: int) -> float:
    """The monthly subscription floor: seats x the plan's per-seat price (PRO is one flat fee)."""
    p = PLANS[plan]
    return p.monthly_usd * (max(seats, 1) if p.per_seat else 1)


# Reference §1: "Billing is per-minute while Starting/Running". `billing.granularity` in the config
# picks "minute" (each job's running time rounded up to whole minutes: the reference's rule, the
# default) or "second" (exact, for comparing with a bill that is).
BILLING_GRANULARITIES = ("minute", "second")


@dataclass(frozen=True)
class PriceBook:
    """The flavors and prices in use, where they came from, and how running time is billed."""

    flavors: dict[str, Flavor]
    source: str  # "shipped" or "live"
    detail: str = PRICES_SOURCE
    _unknown: frozenset[str] = field(default=frozenset(), repr=False)
    granularity: str = "minute"
    """"minute" (running time rounded up to whole minutes) or "second" (see BILLING_GRANULARITIES)."""

    def billed_by(self, granularity: str) -> PriceBook:
        """The same prices, billed per `granularity`."""
        if granularity not in BILLING_GRANULARITIES:
            raise ValueError(f"billing granularity must be one of {', '.join(BILLING_GRANULARITIES)}")
        return replace(self, granularity=granularity)

    def get(self, name: str) -> Flavor:
        try:
            return self.flavors[name]
        except KeyError:
            known = ", ".join(self.flavors)
            raise KeyError(f"unknown flavor {name!r}; known flavors: {known}") from None

    def __contains__(self, name: object) -> bool:
        return name in self.flavors

    def price_per_hour(self, name: str) -> float:
        return self.get(name).price_per_hour

    def gpu_flavors(self) -> list[Flavor]:
        return [f for f in self.flavors.values() if f.is_gpu]

    def multiplier(self, name: str) -> tuple[float, str]:
        """The heuristic's hardware multiplier for a flavor of this book, and where it comes from."""
        flavor = self.flavors.get(name)
        if flavor is not None and flavor.multiplier is not None:
            return flavor.multiplier, flavor.multiplier_source
        return multiplier_for(name)

    def notes(self) -> dict[str, str]:
        """Flavor -> why its figures are not all the live list's (empty for a shipped book)."""
        return {name: f.note for name, f in self.flavors.items() if f.note}

    def describe(self) -> str:
        if self.source == "live":
            return f"live prices from the backend ({self.detail})"
        return f"shipped prices ({self.detail})"


def shipped_price_book(granularity: str = "minute") -> PriceBook:
    return PriceBook({f.name: f for f in SHIPPED_FLAVORS}, "shipped", PRICES_SOURCE).billed_by(granularity)


def multiplier_for(flavor: str) -> tuple[float, str]:
    """The heuristic's hardware multiplier for a flavor and where it comes from."""
    if flavor in REFERENCE_MULTIPLIERS:
        return REFERENCE_MULTIPLIERS[flavor], "reference"
    if flavor in ASSUMED_MULTIPLIERS:
        value, why = ASSUMED_MULTIPLIERS[flavor]
        return value, f"assumed: {why}"
    raise KeyError(f"no hardware multiplier for flavor {flavor!r} (training estimates need a GPU flavor)")


def _gpu_family(text: str) -> str:
    """A GPU model as one key: "1x RTX PRO 6000" / "RTX PRO 6000" / "rtx pro 6000" -> "RTXPRO6000"."""
    model = text.split("x ", 1)[1] if "x " in text and text.split("x ", 1)[0].isdigit() else text
    return "".join(model.split()).upper()


def _gpu_count(text: str) -> int:
    head = text.split("x ", 1)[0]
    return int(head) if head.isdigit() else 1


def family_multiplier(model: str) -> tuple[float, str]:
    """The speed factor of a GPU family: the slowest of the shipped flavors built on it (so an
    estimate, and the timeout padded from it, is never short); a GPU no shipped flavor has is taken
    to be as slow as the slowest known one. Calibration from real runs replaces either."""
    family = _gpu_family(model)
    known = [(multiplier_for(f.name)[0], -_gpu_count(f.gpu), f.name)
             for f in SHIPPED_FLAVORS if f.is_gpu and _gpu_family(f.gpu) == family]
    if known:
        value, _, name = max(known)  # the slowest; of equals, the one with the fewest GPUs
        return value, f"assumed: same GPU ({model}) as {name}"
    value, name = max((multiplier_for(f.name)[0], f.name) for f in SHIPPED_FLAVORS if f.is_gpu)
    gpu = model or "GPU of this kind"
    return value, f"assumed: no shipped flavor has a {gpu}; as slow as {name}, the slowest known"


def _guidance(model: str, count: int, memory_gb: int) -> tuple[str, float, str]:
    """(fits, max_model_b, where from) for a GPU flavor the shipped table does not have: the shipped
    flavor of the same GPU with the most of them not above `count`, else the shipped GPU flavor
    with the most memory not above `memory_gb`; nothing known: not for training."""
    family = _gpu_family(model)
    same = [f for f in SHIPPED_FLAVORS if f.is_gpu and _gpu_family(f.gpu) == family and _gpu_count(f.gpu) <= count]
    if same:
        base = max(same, key=lambda f: (_gpu_count(f.gpu), f.max_model_b))
        return base.fits, base.max_model_b, f"size guidance of {base.name} (same GPU, {base.gpu})"
    smaller = [f for f in SHIPPED_FLAVORS if f.is_gpu and 0 < f.gpu_memory_gb <= memory_gb]
    if smaller:
        base = max(smaller, key=lambda f: (f.max_model_b, f.gpu_memory_gb))
        why = f"size guidance of {base.name} ({base.gpu_memory_gb} GB, no more GPU memory)"
        return base.fits, base.max_model_b, why
    return "", 0.0, "no size guidance (no shipped flavor to compare with)"


def _hourly(cost: float, unit: str) -> float:
    """$/hr of a listed price. Hourly prices are quoted in cents (reference §3: l4x1 $0.80/hr, $0.0133
    a minute); a per-minute price is that quote / 60, rounded (13333 micro-USD), so x 60 it is read
    back to the cent it came from, and every estimate uses the quoted price whichever list it read."""
    if not unit.startswith("min"):
        return round(cost, 6)
    per_hour = cost * 60.0
    quoted = round(per_hour, 2)
    return quoted if quoted > 0 and abs(per_hour - quoted) <= 60 * 0.5e-6 + 1e-12 else round(per_hour, 6)


def price_book_from_hardware(hardware: Iterable[Any], detail: str = "list_jobs_hardware") -> PriceBook:
    """The shipped table with the live prices of `HfApi.list_jobs_hardware()` merged in.

    Each item has `name`, `unit_cost_usd` and `unit_label` ("minute" or "hour") and, for GPUs,
    `accelerator` with `quantity`, `model` and `vram` (the flavor's total). A flavor both know takes
    the live price and keeps the shipped guidance; a shipped flavor HF does not list keeps its
    shipped price, with a note saying so (it may be gone, or only hidden from this account); a
    flavor only HF lists gets size guidance and a speed factor from its GPU family
    (:func:`family_multiplier`), with a note, so that estimates on it work.
    """
    shipped = {f.name: f for f in SHIPPED_FLAVORS}
    flavors: dict[str, Flavor] = {}
    for hw in hardware:
        name = getattr(hw, "name", None)
        cost = getattr(hw, "unit_cost_usd", None)
        if not name or cost is None:
            continue
        unit = (getattr(hw, "unit_label", None) or "hour").lower()
        per_hour = _hourly(float(cost), unit)
        base = shipped.get(name)
        acc = getattr(hw, "accelerator", None)
        if base is not None:
            flavors[name] = replace(base, price_per_hour=per_hour)
        elif acc is not None:
            model = str(getattr(acc, "model", "") or "").strip()
            quantity = str(getattr(acc, "quantity", "") or "").strip()
            count = int(quantity) if quantity.isdigit() and int(quantity) > 0 else 1
            vram = str(getattr(acc, "vram", "") or "")
            mem = int("".join(ch for ch in vram if ch.isdigit()) or 0)
            fits, max_b, why = _guidance(model, count, mem)
            value, source = family_multiplier(model)
            flavors[name] = Flavor(
                name, "gpu", f"{count}x {model}".strip(), mem, per_hour, fits, max_b,
                multiplier=value, multiplier_source=source,
                note=f"listed by the backend only: {why}; speed {source.removeprefix('assumed: ')}",
            )
        else:
            flavors[name] = Flavor(name, "cpu", "", 0, per_hour, "", 0.0,
                                   note="listed by the backend only (CPU: not for training)")
    if not flavors:
        return shipped_price_book()
    missing = [f for name, f in shipped.items() if name not in flavors]
    for f in missing:
        flavors[f.name] = replace(
            f, note=f"not in the backend's hardware list: shipped price of {PRICES_READ_ON}"
        )
    if missing:
        detail = f"{detail}; {len(missing)} flavor(s) it does not list at shipped prices"
    return PriceBook(flavors, "live", detail)
