"""The what-if explorer: change the fleet's assumptions and see the cost move at once.

A modal screen with one compact input per assumption (tenants, cadence, flavor, model size,
examples, epochs, max steps, Unsloth, the tenants' training kind, the builder model's size and whether it is a
full fine-tune, plan, seats). Every change recomputes `scenario.project` on the spot (it is
pure arithmetic) and shows, side by side, the current fleet (its real schedules, from
:func:`console.ledger.fleet_costs`), the what-if, and the difference — with the reference heuristic
and the estimate calibrated from the ledger's real runs, the number of runs the calibration rests
on, and the cheapest flavor whose GPU memory still holds the run (`costs.cheaper_flavors_that_fit`
with the run's shape). The run's GPU-memory estimate on its flavor is a line of its own, in red with
the cheapest flavor that fits when it does not (`console.vram`, as `console whatif` refuses it);
so is the builder model's, with its cost per run and per month (the fleet's builder, or one given
by its size: blank for none). Input the model refuses shows the reason and leaves the last good
numbers in place. `console whatif` is the same model, headless.

Construct it with the config and, optionally, a `Ledger` (its calibration is read in a thread
worker), the scheduled jobs the app already holds, and the price book in use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Checkbox, Input, Label, Select, Static

from console import jobspec, vram
from console.costs import Calibration, RunSpec, cheaper_flavors_that_fit
from console.cron import describe_cron, normalize_cron
from console.inputs import CostInputError, check_range, format_duration
from console.kinds import TENANT_KINDS
from console.ledger import FleetCosts, Ledger, fleet_costs
from console.prices import PLANS, PriceBook, shipped_price_book
from console.scenario import Projection, Scenario, project
from console.ui import keys

NO_CALIBRATION = Calibration({}, None, 0)
KINDS = TENANT_KINDS
"""The tenants' training kinds the memory estimate tells apart (`console whatif --kind`)."""
BUILDER_EXAMPLES = 3000
BUILDER_FLAVOR = "a100-large"
"""A builder model given here by its size alone: `console whatif --builder-*`'s defaults."""


def _money(v: float) -> str:
    return f"${v:,.2f}"


def _delta(v: float) -> Text:
    if abs(v) < 0.005:
        return Text("=", style="dim")
    return Text(f"{'+' if v > 0 else '-'}${abs(v):,.2f}", style="red" if v > 0 else "green")


def _number(text: str, name: str, *, whole: bool) -> float:
    cleaned = text.strip().replace(",", "").replace("_", "")
    if cleaned.lower().endswith("b") and name == "model_b":
        cleaned = cleaned[:-1]
    try:
        value = float(cleaned)
    except ValueError:
        raise CostInputError(f"{name} must be a number, got {text.strip()!r}") from None
    if whole:
        if value != int(value):
            raise CostInputError(f"{name} must be a whole number, got {text.strip()!r}")
        return int(value)
    return value


@dataclass(frozen=True)
class WhatIfResult:
    """The numbers on screen after the last valid change."""

    scenario: Scenario
    heuristic: Projection
    calibrated: Projection
    calibration_runs: int
    flavor_runs: int
    cheaper: list[Any]
    kind: str = "sft"
    builder_full: bool = False


class WhatIfScreen(ModalScreen[None]):
    """Change one assumption, see per-run cost, timeout and the monthly total move."""

    DEFAULT_CSS = """
    WhatIfScreen { align: center middle; }
    WhatIfScreen #whatif-box {
        width: 100%; max-width: 110; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1;
    }
    WhatIfScreen #whatif-title { height: 1; text-style: bold; }
    WhatIfScreen #whatif-body { height: auto; }
    WhatIfScreen #whatif-form { width: 30; height: auto; }
    WhatIfScreen .wi-row { height: 1; }
    WhatIfScreen .wi-row Label { width: 10; color: $text-muted; }
    WhatIfScreen .wi-row Input, WhatIfScreen .wi-row Select { width: 1fr; }
    WhatIfScreen .wi-row Input.invalid { background: $error 30%; }
    WhatIfScreen #wi-unsloth, WhatIfScreen #wi-builder-full { height: 1; }
    WhatIfScreen #whatif-table { width: 1fr; height: auto; padding-left: 1; }
    WhatIfScreen #whatif-error { height: auto; color: $error; }
    WhatIfScreen #whatif-notes { height: auto; }
    WhatIfScreen #whatif-help { height: 1; color: $text-muted; }
    """

    BINDINGS = keys.WHATIF

    @dataclass
    class Recomputed(Message):
        """The numbers changed (posted on every valid change)."""

        result: WhatIfResult

    @dataclass
    class CalibrationRead(Message):
        calibration: Calibration
        fleet: FleetCosts
        basis: str = "hf"

    def __init__(
        self,
        cfg: Any,
        *,
        ledger: Ledger | None = None,
        calibration: Calibration | None = None,
        scheduled_jobs: Sequence[Any] = (),
        prices: PriceBook | None = None,
    ) -> None:
        super().__init__()
        self.cfg = cfg
        self.ledger = ledger
        self.prices = prices or shipped_price_book()
        self.scheduled_jobs = list(scheduled_jobs)
        self.calibration = calibration or NO_CALIBRATION
        self.calibration_basis = "hf" if self.calibration.runs else "none"
        """hf | local (the embedded server's CPU runs) | none"""
        self.fleet = self._fleet(self.calibration)
        self.builder_full = any(
            req is not None and req.kind == "builder" and req.full
            for req in (jobspec.read_request(sj) for sj in self.scheduled_jobs if not getattr(sj, "suspend", False))
        )
        """Whether the fleet's builder model is a full fine-tune (its schedule says so)."""
        self.result: WhatIfResult | None = None
        self.error: str | None = None

    def _fleet(self, calibration: Calibration) -> FleetCosts:
        fleet = fleet_costs(
            self.scheduled_jobs,
            plan=self.cfg.plan,
            seats=self.cfg.seats,
            default_flavor=self.cfg.defaults.flavor,
            prices=self.prices,
            calibration=calibration,
            timeout_buffer=self.cfg.defaults.timeout_buffer,
        )
        # the timeout is padded as a submission pads it: by the configured overhead too
        overhead = self.cfg.defaults.timeout_overhead_s
        return replace(fleet, representative=replace(fleet.representative, timeout_overhead_s=overhead))

    # -- layout

    def compose(self) -> ComposeResult:
        s = self.fleet.representative
        flavors = [(f.name, f.name) for f in self.prices.gpu_flavors()]
        with Vertical(id="whatif-box"):
            yield Static("What-if: change an assumption, the cost follows", id="whatif-title")
            with Horizontal(id="whatif-body"):
                with Vertical(id="whatif-form"):
                    yield from self._row("Tenants", Input(str(s.tenants), id="wi-tenants", compact=True))
                    yield from self._row("Cadence", Input(s.cadence, id="wi-cadence", compact=True))
                    yield from self._row(
                        "Flavor",
                        Select(flavors, value=s.run.flavor, allow_blank=False, id="wi-flavor", compact=True),
                    )
                    yield from self._row("Model B", Input(f"{s.run.model_b:g}", id="wi-model-b", compact=True))
                    yield from self._row("Examples", Input(str(s.run.examples), id="wi-examples", compact=True))
                    yield from self._row("Epochs", Input(f"{s.run.epochs:g}", id="wi-epochs", compact=True))
                    steps = str(s.run.max_steps) if s.run.max_steps else ""
                    yield from self._row(
                        "Max steps", Input(steps, placeholder="(epochs)", id="wi-max-steps", compact=True)
                    )
                    yield Checkbox("Unsloth (~2x faster)", s.run.unsloth, id="wi-unsloth", compact=True)
                    yield from self._row(
                        "Kind",
                        Select([(k, k) for k in KINDS], value="sft", allow_blank=False, id="wi-kind", compact=True),
                    )
                    builder = f"{s.builder.model_b:g}" if s.builder else ""
                    yield from self._row(
                        "Builder B", Input(builder, placeholder="(none)", id="wi-builder-b", compact=True)
                    )
                    yield Checkbox("Builder full fine-tune", self.builder_full, id="wi-builder-full", compact=True)
                    yield from self._row(
                        "Plan",
                        Select([(p, p) for p in PLANS], value=s.plan, allow_blank=False, id="wi-plan",
                               compact=True),
                    )
                    yield from self._row("Seats", Input(str(s.seats), id="wi-seats", compact=True))
                yield Static("", id="whatif-table")
            yield Static("", id="whatif-error")
            yield Static("", id="whatif-notes")
            yield Static("esc close · ctrl+z back to the current fleet · tab next field", id="whatif-help")

    @staticmethod
    def _row(label: str, widget: Any) -> ComposeResult:
        with Horizontal(classes="wi-row"):
            yield Label(label)
            yield widget

    def on_mount(self) -> None:
        self.recompute()
        self.query_one("#wi-tenants", Input).focus()
        if self.ledger is not None:
            self._read_calibration()

    @work(thread=True, exclusive=True, group="whatif-calibration", exit_on_error=False,
          description="read the ledger's calibration")
    def _read_calibration(self) -> None:
        assert self.ledger is not None
        cal, basis = self.ledger.calibration_from_store()  # no entry loaded into memory
        self.post_message(self.CalibrationRead(cal, self._fleet(cal), basis))

    def on_what_if_screen_calibration_read(self, message: CalibrationRead) -> None:
        self.calibration = message.calibration
        self.calibration_basis = message.basis
        self.fleet = message.fleet
        self.recompute()

    # -- changes

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def _changed(self, event: Message) -> None:
        event.stop()
        self.recompute()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_reset(self) -> None:
        s = self.fleet.representative
        self.query_one("#wi-tenants", Input).value = str(s.tenants)
        self.query_one("#wi-cadence", Input).value = s.cadence
        self.query_one("#wi-flavor", Select).value = s.run.flavor
        self.query_one("#wi-model-b", Input).value = f"{s.run.model_b:g}"
        self.query_one("#wi-examples", Input).value = str(s.run.examples)
        self.query_one("#wi-epochs", Input).value = f"{s.run.epochs:g}"
        self.query_one("#wi-max-steps", Input).value = str(s.run.max_steps) if s.run.max_steps else ""
        self.query_one("#wi-unsloth", Checkbox).value = s.run.unsloth
        self.query_one("#wi-kind", Select).value = "sft"
        self.query_one("#wi-builder-b", Input).value = f"{s.builder.model_b:g}" if s.builder else ""
        self.query_one("#wi-builder-full", Checkbox).value = self.builder_full
        self.query_one("#wi-plan", Select).value = s.plan
        self.query_one("#wi-seats", Input).value = str(s.seats)
        self.recompute()

    def scenario_from_inputs(self) -> Scenario:
        """The scenario the form describes; CostInputError names the first field it refuses."""
        for widget in self.query(Input):
            widget.remove_class("invalid")
        fields: dict[str, Any] = {}
        for wid, name, whole in (("wi-tenants", "tenants", True), ("wi-model-b", "model_b", False),
                                 ("wi-examples", "examples", True), ("wi-epochs", "epochs", False),
                                 ("wi-seats", "seats", True)):
            box = self.query_one(f"#{wid}", Input)
            try:
                fields[name] = check_range(name, _number(box.value, name, whole=whole))
            except CostInputError:
                box.add_class("invalid")
                raise
        cadence_box = self.query_one("#wi-cadence", Input)
        try:
            cadence = normalize_cron(cadence_box.value)
        except CostInputError:
            cadence_box.add_class("invalid")
            raise
        builder_box = self.query_one("#wi-builder-b", Input)
        builder = self.fleet.representative.builder
        if builder_box.value.strip():
            try:
                size = check_range("model_b", _number(builder_box.value, "model_b", whole=False))
            except CostInputError:
                builder_box.add_class("invalid")
                raise
            base = builder or RunSpec(size, BUILDER_EXAMPLES, fields["epochs"], BUILDER_FLAVOR)
            builder = replace(base, model_b=size)
        else:
            builder = None
        steps_box = self.query_one("#wi-max-steps", Input)
        steps = None
        if steps_box.value.strip():
            try:
                steps = int(_number(steps_box.value, "max_steps", whole=True))
                if not 1 <= steps <= 10_000_000:
                    raise CostInputError(f"max_steps must be a whole number from 1 to 10000000, got {steps}")
            except CostInputError:
                steps_box.add_class("invalid")
                raise
        flavor = self.query_one("#wi-flavor", Select).value
        plan = self.query_one("#wi-plan", Select).value
        kind = self.query_one("#wi-kind", Select).value
        if not isinstance(flavor, str) or not isinstance(plan, str):
            raise CostInputError("choose a flavor and a plan")
        # the run as a job spec costs it (max_steps in steps of the kind's recipe batch)
        run = jobspec.TrainingRequest(
            tenant="whatif", dataset="-", model_b=fields["model_b"], examples=fields["examples"],
            epochs=fields["epochs"], flavor=flavor, kind=str(kind), max_steps=steps,
            unsloth=self.query_one("#wi-unsloth", Checkbox).value,
        ).run_spec()
        return replace(
            self.fleet.representative,
            tenants=fields["tenants"],
            cadence=cadence,
            run=run,
            plan=plan,
            seats=fields["seats"],
            builder=builder,
        )

    def recompute(self) -> WhatIfResult | None:
        """Recompute from the form; on refusal show why and keep the last good numbers."""
        try:
            scenario = self.scenario_from_inputs()
            heuristic = project(scenario, self.prices)
            cal = self.calibration if self.calibration.runs else None
            calibrated = project(scenario, self.prices, calibration=cal)
            kind = str(self.query_one("#wi-kind", Select).value)
            cheaper = cheaper_flavors_that_fit(scenario.run, self.prices, calibration=cal,
                                               run=self._shape(scenario, kind))
        except (CostInputError, vram.FitError) as exc:
            self.error = str(exc)
            self.query_one("#whatif-error", Static).update(Text(f"Not changed: {exc}"))
            return None
        own = self.calibration.per_flavor.get(scenario.run.flavor)
        self.error = None
        self.result = WhatIfResult(scenario, heuristic, calibrated, self.calibration.runs,
                                   own.runs if own else 0, cheaper, kind,
                                   self.query_one("#wi-builder-full", Checkbox).value)
        self.query_one("#whatif-error", Static).update("")
        self._draw(self.result)
        self.post_message(self.Recomputed(self.result))
        return self.result

    @staticmethod
    def _shape(scenario: Scenario, kind: str) -> vram.RunShape:
        """How a tenant's run uses GPU memory: LoRA of its size, its kind, at the recipes' batch."""
        return vram.RunShape(scenario.run.model_b, kind=kind, unsloth=scenario.run.unsloth)

    # -- drawing

    def _draw(self, r: WhatIfResult) -> None:
        f = self.fleet
        h, c = r.heuristic, r.calibrated
        table = Table(box=None, padding=(0, 1), show_edge=False, header_style="bold")
        table.add_column("")
        table.add_column("Fleet now", justify="right")
        table.add_column("What-if", justify="right")
        table.add_column("Diff", justify="right")
        fleet_runs = f.runs_per_month
        wi_runs = r.scenario.tenants * h.runs_per_month
        fleet_per_run = f.gpu_usd / fleet_runs if fleet_runs else 0.0
        fleet_per_run_cal = f.gpu_calibrated_usd / fleet_runs if fleet_runs else 0.0
        table.add_row("Tenants", str(f.tenants), str(r.scenario.tenants), "")
        table.add_row("Runs/month", f"{fleet_runs:.1f}", f"{wi_runs:.1f}", f"{wi_runs - fleet_runs:+.1f}")
        table.add_row("Per run", _money(fleet_per_run), _money(h.per_run.cost_usd),
                      _delta(h.per_run.cost_usd - fleet_per_run))
        table.add_row(" calibrated", _money(fleet_per_run_cal), _money(c.per_run.cost_usd),
                      _delta(c.per_run.cost_usd - fleet_per_run_cal))
        table.add_row("Hours/run", "", f"{h.per_run.hours:.2f}", f"cal {c.per_run.hours:.2f}")
        table.add_row("Timeout", "", format_duration(h.per_run.timeout_seconds),
                      f"cal {format_duration(c.per_run.timeout_seconds)}")
        gpu, gpu_cal = h.tenants_usd + h.builder_usd, c.tenants_usd + c.builder_usd
        table.add_row("GPU/month", _money(f.gpu_usd), _money(gpu), _delta(gpu - f.gpu_usd))
        table.add_row(" calibrated", _money(f.gpu_calibrated_usd), _money(gpu_cal),
                      _delta(gpu_cal - f.gpu_calibrated_usd))
        if f.builder_schedules or r.scenario.builder is not None:
            table.add_row(" builder", _money(f.builder_usd), _money(h.builder_usd),
                          _delta(h.builder_usd - f.builder_usd))
        table.add_row("Plan floor", _money(f.plan_floor_usd), _money(h.plan_floor_usd),
                      _delta(h.plan_floor_usd - f.plan_floor_usd))
        table.add_row(Text("Month", style="bold"), _money(f.monthly_usd), Text(_money(h.monthly_usd), style="bold"),
                      _delta(h.monthly_usd - f.monthly_usd))
        table.add_row(Text(" calibrated", style="bold"), _money(f.monthly_calibrated_usd),
                      Text(_money(c.monthly_usd), style="bold"), _delta(c.monthly_usd - f.monthly_calibrated_usd))
        self.query_one("#whatif-table", Static).update(table)
        self.query_one("#whatif-notes", Static).update(self._notes(r))

    def _notes(self, r: WhatIfResult) -> Text:
        lines: list[Text] = []
        flavor = r.scenario.run.flavor
        if r.calibration_runs == 0:
            lines.append(Text("Calibration: no finished training runs in the ledger yet; "
                              "calibrated = reference heuristic", style="dim"))
        else:
            factor = r.calibrated.per_run.calibration_factor
            where = (f"{r.flavor_runs} run(s) on {flavor}" if r.flavor_runs
                     else f"all runs (none on {flavor})")
            own = self.calibration.per_flavor.get(flavor)
            err = (f"; heuristic off by {own.heuristic_error_pct:.0f}%, calibrated "
                   f"{own.calibrated_error_pct:.0f}%" if own else "")
            spread = self.calibration.spread_for(flavor)
            lines.append(Text(f"Calibration: x{factor:.3g} from {where}"
                              + (f" ({spread})" if spread else "")
                              + f", {r.calibration_runs} run(s) in the ledger{err}"))
            if self.calibration_basis == "local":
                lines.append(Text("  (runs on the local server, timed on this machine's CPU: not HF "
                                  "GPU timings)", style="yellow"))
        lines.extend(self._memory(r))
        if r.cheaper:
            best = r.cheaper[0]
            saving = r.calibrated.per_run.cost_usd - best.cost_usd
            monthly = saving * r.scenario.tenants * r.heuristic.runs_per_month
            lines.append(Text(f"Cheaper: {best.flavor} fits {r.scenario.run.model_b:g}B {r.kind}: "
                              f"${best.cost_usd:.2f}/run (-${saving:.2f}, -${monthly:,.2f}/month), "
                              f"{best.hours:.2f} h", style="green"))
        else:
            lines.append(Text(f"{flavor} is the cheapest flavor that fits "
                              f"{r.scenario.run.model_b:g}B", style="dim"))
        lines.extend(self._builder(r))
        if not r.heuristic.plan_can_run_jobs:
            lines.append(Text(f"The {r.scenario.plan} plan cannot run HF Jobs: PRO or higher",
                              style="bold red"))
        return Text("\n").join(lines)

    def _memory(self, r: WhatIfResult) -> list[Text]:
        """The run's GPU-memory estimate on its flavor; when it does not fit, why and where it does."""
        flavor = r.scenario.run.flavor
        if flavor not in self.prices or not self.prices.get(flavor).is_gpu:
            return []
        shape = self._shape(r.scenario, r.kind)
        try:
            here = vram.fit(shape, self.prices.get(flavor))
            why = None if here.fits else vram.refusal(shape, flavor, self.prices)
        except vram.FitError as exc:
            return [Text(f"Memory: {exc}", style="yellow")]
        if why:
            return [Text(f"Does not fit {flavor}: {why}", style="bold red")]
        return [Text(f"Memory: {here.describe()}", style="dim")]

    def _builder(self, r: WhatIfResult) -> list[Text]:
        """The builder model's cost per run and per month, and its GPU-memory fit (LoRA or full)."""
        b, est = r.scenario.builder, r.heuristic.builder_per_run
        if b is None or est is None:
            return []
        method = "full" if r.builder_full else "lora"
        lines = [Text(f"Builder: {b.model_b:g}B {method} on {b.flavor}, {describe_cron(r.scenario.builder_cadence)}: "
                      f"{est.hours:.1f} h, ${est.cost_usd:.2f}/run, ${r.heuristic.builder_usd:,.2f}/month")]
        if b.flavor in self.prices and self.prices.get(b.flavor).is_gpu:
            shape = vram.RunShape(b.model_b, method=method, kind="builder")
            try:
                why = vram.refusal(shape, b.flavor, self.prices)
            except vram.FitError as exc:
                why = str(exc)
            if why:
                lines.append(Text(f"Builder does not fit {b.flavor}: {why}", style="bold red"))
        return lines
