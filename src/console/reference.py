"""The reference document's section 4 tables, recomputed by the cost model.

Each row carries the figure the document prints (as written, e.g. "~$9.5") and the model's value;
a row agrees when the model's value rounds to the document's at the document's own precision.
The document rounds "weekly" to 4.3 runs/month; the model counts a weekly cron's firings
(about 4.35), so fleet rows are also shown at 4.3 to make the difference visible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from console import vram
from console.costs import RunSpec, estimate_run
from console.cron import runs_per_month
from console.prices import REFERENCE_WEEKLY_RUNS_PER_MONTH, plan_floor_usd, shipped_price_book
from console.scenario import Scenario, project

SOURCE = "reference §4 'Cost model for our two targets' (2026-06-27)"

WEEKLY = "0 0 * * 0"
MONTHLY = "0 0 1 * *"


@dataclass(frozen=True)
class Figure:
    label: str
    document: str  # as printed, e.g. "~4.4 h" or "~$11"
    model: float

    @property
    def document_value(self) -> float:
        m = re.search(r"(\d+(?:\.\d+)?)", self.document.replace(",", ""))
        return float(m.group(1)) if m else float("nan")

    @property
    def precision(self) -> float:
        """The document's rounding unit: 1 for "~$11", 0.1 for "~4.4 h", 0.01 for "$0.86"."""
        m = re.search(r"\d+(?:\.(\d+))?", self.document.replace(",", ""))
        decimals = len(m.group(1)) if m and m.group(1) else 0
        return 10.0**-decimals

    def agrees(self, model: float | None = None) -> bool:
        value = self.model if model is None else model
        return abs(value - self.document_value) <= self.precision / 2 + 1e-9


@dataclass(frozen=True)
class RunRow:
    config: str
    spec: RunSpec
    time: Figure
    cost: Figure

    @property
    def memory(self) -> vram.Fit:
        """The row's GPU-memory estimate on its flavor (LoRA, the recipes' defaults)."""
        return vram.fit(vram.RunShape(self.spec.model_b), shipped_price_book().get(self.spec.flavor))

    def memory_note(self) -> str:
        """Where the document's flavor does not hold the row by the memory estimate, in words
        (with what would: Unsloth, or the cheapest flavor that fits); '' when it fits."""
        here = self.memory
        if here.fits:
            return ""
        shape = vram.RunShape(self.spec.model_b)
        lean = vram.unsloth_fit(shape, self.spec.flavor)
        best = vram.cheapest_fit(shape)
        options = ([f"with Unsloth ~{lean.needed_gb:.1f} GB fits"] if lean else []) + (
            [f"{best.flavor} is the cheapest flavor that fits without it"] if best else [])
        return (f"{self.config} on {self.spec.flavor}: ~{here.needed_gb:.1f} GB by the memory estimate, over its "
                f"{here.gpu_gb:g} GB per GPU" + (f" ({'; '.join(options)})" if options else ""))


@dataclass(frozen=True)
class FleetRow:
    tenants: int
    column: str
    cost_per_run: float
    cadence: str
    figure: Figure  # model value: counted from the cron
    at_reference_rate: float  # the same with the document's 4.3 (weekly) / 1.0 (monthly)


def _run_row(config: str, spec: RunSpec, doc_time: str, doc_cost: str) -> RunRow:
    est = estimate_run(spec)
    return RunRow(config, spec, Figure("time", doc_time, est.hours), Figure("cost", doc_cost, est.cost_usd))


def builder_rows() -> list[RunRow]:
    return [
        _run_row("7B LoRA, 3k ex, 3 ep", RunSpec(7, 3000, 3, "a100-large"), "~4.4 h", "~$11"),
        _run_row("7B LoRA, 3k ex, 3 ep", RunSpec(7, 3000, 3, "a10g-large"), "~6.3 h", "~$9.5"),
        _run_row("7B LoRA, 1k ex, 3 ep", RunSpec(7, 1000, 3, "a100-large"), "~1.5 h", "~$4"),
        _run_row("13B LoRA, 3k ex, 3 ep", RunSpec(13, 3000, 3, "a100-large"), "~8 h", "~$20"),
    ]


def tenant_rows() -> list[RunRow]:
    return [
        _run_row("1B LoRA, 500 ex, 3 ep", RunSpec(1, 500, 3, "t4-small"), "~0.3 h", "~$0.12"),
        _run_row("3B LoRA, 1k ex, 3 ep", RunSpec(3, 1000, 3, "l4x1"), "~1.1 h", "~$0.86"),
        _run_row("3B LoRA, 1k ex, 3 ep", RunSpec(3, 1000, 3, "t4-small"), "~1.8 h", "~$0.72"),
        _run_row("3B LoRA, 1k ex, 3 ep", RunSpec(3, 1000, 3, "a10g-small"), "~1.2 h", "~$1.17"),
    ]


# The document's fleet table: (tenants, weekly @ ~$1/run, weekly @ ~$0.30/run, monthly @ ~$1/run).
_FLEET_DOC = [
    (10, "~$43", "~$13", "~$10"),
    (50, "~$215", "~$65", "~$50"),
    (100, "~$430", "~$129", "~$100"),
]


def fleet_rows() -> list[FleetRow]:
    rows = []
    weekly = runs_per_month(WEEKLY)
    monthly = runs_per_month(MONTHLY)
    for tenants, w1, w03, m1 in _FLEET_DOC:
        for column, per_run, cadence, rate, ref_rate, doc in (
            ("weekly @ ~$1/run", 1.0, WEEKLY, weekly, REFERENCE_WEEKLY_RUNS_PER_MONTH, w1),
            ("weekly @ ~$0.30/run", 0.30, WEEKLY, weekly, REFERENCE_WEEKLY_RUNS_PER_MONTH, w03),
            ("monthly @ ~$1/run", 1.0, MONTHLY, monthly, 1.0, m1),
        ):
            rows.append(
                FleetRow(
                    tenants,
                    column,
                    per_run,
                    cadence,
                    Figure(f"{tenants} tenants, {column}", doc, tenants * rate * per_run),
                    tenants * ref_rate * per_run,
                )
            )
    return rows


@dataclass(frozen=True)
class CombinedFigure:
    tenants_usd: float
    builder_usd: float
    plan_usd: float
    total: Figure


def combined() -> CombinedFigure:
    """"100 tenants weekly + builder weekly + Team plan ≈ ~$500/mo" (tenants at the ~$1/run mid-case)."""
    tenants = 100 * runs_per_month(WEEKLY) * 1.0
    builder = project(
        Scenario(tenants=0, cadence=WEEKLY, builder=RunSpec(7, 3000, 3, "a100-large"), plan="team")
    ).builder_usd
    plan = plan_floor_usd("team", 1)
    total = tenants + builder + plan
    # The document gives "≈ ~$500/mo order-of-magnitude": agree to the nearest $10.
    return CombinedFigure(tenants, builder, plan, Figure("combined monthly", "~$500", total))


def combined_agrees(c: CombinedFigure) -> bool:
    return abs(c.total.model - 500) <= 10


def memory_disagreements() -> list[str]:
    """The document's rows whose flavor does not hold the run by the GPU-memory estimate (the
    document's §4 tables cost time, not memory), each in words."""
    return [note for row in builder_rows() + tenant_rows() if (note := row.memory_note())]


def all_agree() -> bool:
    runs = builder_rows() + tenant_rows()
    ok = all(r.time.agrees() and r.cost.agrees() for r in runs)
    ok = ok and all(r.figure.agrees(r.at_reference_rate) for r in fleet_rows())
    ok = ok and all(abs(r.figure.model / r.figure.document_value - 1) < 0.02 for r in fleet_rows())
    return ok and combined_agrees(combined())
