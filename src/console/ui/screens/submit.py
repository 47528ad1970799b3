"""The submit form: one tenant's training job, with its cost and padded timeout before confirming.

Fields: tenant, kind (`kinds.TRAINING_KINDS`: an SFT, DPO, KTO or GRPO LoRA adapter, a reward
model, an embedding model with its encoder bi | cross | sparse, or the builder model, LoRA or in
full), a GRPO run's rewards (comma-separated: exact, numeric, format, or a module.py shipped beside
the dataset; empty: the recipe's numeric,format), dataset, Hub repo
(where the weights are pushed), base model, model size, examples, epochs, flavor (with its price),
timeout (pre-filled with the padding rule's value and kept in step until edited, never rewritten
while the cursor is in it: emptied, it means the padded value), max steps, a CPU dataset preflight
first (on by default; it checks the dataset as the kind's data), ssh on/off and an optional cron
that makes it a scheduled job. The encoder row shows for an embedding run only, the rewards row
for GRPO only, the full fine-tune box for the builder only, the Unsloth box (about 2x faster, less
memory) for the kinds whose recipe loads with Unsloth. The
form refuses invalid input with the reason and only dismisses with a request that `jobspec` accepts.

GPU memory: the run's estimate on the flavor (`jobspec.fit_problem`, `console.vram`) is shown under
the cost; a run that does not fit the flavor is refused with the estimate and the cheapest flavor
that fits, in one line.

A job trains only its own tenant's data: the dataset and the Hub repo follow the tenant field
(a tenant of the known fleet fills them from its request; any other tenant clears what the form
filled in, not what was typed by hand), and a dataset another known tenant trains on is refused.
On the hub backend a submission with no Hub repo or no token is refused here, before any job is
created (both refusals are `jobspec.build_submission`'s, shown as the form's one-line error).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, Checkbox, Input, Label, Select, Static

from console import jobspec, vram
from console.cron import describe_cron, normalize_cron
from console.inputs import CostInputError, format_duration, parse_timeout
from console.jobspec import Submission, SubmissionError, TrainingRequest
from console.kinds import KIND_LABELS, TRAINING_KINDS, UNSLOTH_KINDS
from console.prices import DEFAULT_TIMEOUT_OVERHEAD_S, PriceBook, shipped_price_book
from console.ui import keys
from console.ui.screens.dialog import Dialog

FOLLOW_TENANT = (("f-dataset", "dataset"), ("f-hub-model-id", "hub_model_id"))
"""The fields that belong to the tenant: (field id, TrainingRequest attribute)."""
KIND_ROWS = (("row-encoder", ("embedding",)), ("row-rewards", ("grpo",)), ("row-full", ("builder",)),
             ("row-unsloth", UNSLOTH_KINDS))
"""Rows that show for some kinds only: (row id, the kinds)."""
PROMOTE_WORDS = {"manual": "an engineer", "on_pass": "when it passes", "on_eval": "when it scores better"}
"""Who moves the live tag after a passing run, for the form's Promote choice."""


@dataclass(frozen=True)
class SubmitResult:
    request: TrainingRequest
    submission: Submission
    schedule: str | None
    preflight: bool


class SubmitScreen(Dialog[SubmitResult | None]):
    BINDINGS = keys.SUBMIT_FORM

    def __init__(
        self,
        initial: TrainingRequest,
        *,
        backend_kind: str,
        timeout_buffer: float,
        timeout_overhead_s: float = DEFAULT_TIMEOUT_OVERHEAD_S,
        token: str | None = None,
        prices: PriceBook | None = None,
        known: Mapping[str, TrainingRequest] | None = None,
        destination: str | None = None,
    ) -> None:
        """`known`: tenant -> its request, for the tenants of the known fleet (what the dataset
        and Hub repo follow, and who owns which dataset); `token`: the Hub token (hub backend);
        `destination`: the Hub repo template of a tenant that names none (`jobspec.default_destination`)."""
        super().__init__()
        self.destination = destination
        self.initial = initial
        self.backend_kind = backend_kind
        self.timeout_buffer = timeout_buffer
        self.timeout_overhead_s = timeout_overhead_s
        self.token = token
        self.prices = prices or shipped_price_book()
        self.known = dict(known or {})
        self.owners = jobspec.dataset_owners(self.known.values())
        self._tenant = initial.tenant
        """The tenant the dataset and Hub repo were last made to follow."""
        self._filled = {field_id: getattr(initial, attr) or "" for field_id, attr in FOLLOW_TENANT}
        """What the form itself last put in each field that follows the tenant."""
        self._timeout_edited = False
        self._auto_timeout = ""

    def _row(self, label: str, widget, row_id: str | None = None) -> Horizontal:  # noqa: ANN001
        return Horizontal(Label(label, classes="form-label"), widget, classes="form-row", id=row_id)

    def compose(self) -> ComposeResult:
        r = self.initial
        options = []
        for f in self.prices.gpu_flavors():
            options.append((f"{f.name} ${f.price_per_hour:.2f}/h {f.fits}", f.name))
        flavor = r.flavor if r.flavor in self.prices else options[0][1]
        kind = r.kind if r.kind in TRAINING_KINDS else "sft"
        kinds = [(f"{k} ({KIND_LABELS[k]})", k) for k in TRAINING_KINDS]
        encoder = r.encoder if r.encoder in jobspec.ENCODERS else jobspec.ENCODERS[0]
        with Vertical(id="submit-dialog", classes="dialog"):
            yield Static(Text("Submit a training job", style="bold"), id="submit-title")
            with VerticalScroll(id="submit-fields"):
                yield self._row("Tenant", Input(r.tenant, id="f-tenant", compact=True))
                yield self._row(
                    "Kind", Select(kinds, value=kind, allow_blank=False, id="f-kind", compact=True)
                )
                yield self._row(
                    "Encoder",
                    Select(
                        [(e, e) for e in jobspec.ENCODERS],
                        value=encoder,
                        allow_blank=False,
                        id="f-encoder",
                        compact=True,
                    ),
                    row_id="row-encoder",
                )
                yield self._row(
                    "Rewards",
                    Input(r.rewards or "", id="f-rewards", placeholder="numeric,format", compact=True),
                    row_id="row-rewards",
                )
                yield self._row(
                    "Weights",
                    Checkbox("full fine-tune (every weight)", value=r.full, id="f-full", compact=True),
                    row_id="row-full",
                )
                yield self._row(
                    "Speed",
                    Checkbox("Unsloth (~2x faster, less GPU memory)", value=r.unsloth, id="f-unsloth", compact=True),
                    row_id="row-unsloth",
                )
                yield self._row("Dataset", Input(r.dataset, id="f-dataset", compact=True))
                hub = self.backend_kind == "hub"
                yield self._row(
                    "Hub repo",
                    Input(
                        r.hub_model_id or "",
                        id="f-hub-model-id",
                        placeholder="org/name (required)" if hub else "(none: local artifacts)",
                        compact=True,
                    ),
                )
                yield self._row(
                    "Promote",
                    Select([(f"{p} ({PROMOTE_WORDS[p]})", p) for p in jobspec.PROMOTE_POLICIES],
                           value=r.promote or "manual", allow_blank=False, id="f-promote", compact=True),
                )
                yield self._row(
                    "Margin",
                    Input("" if r.promote_margin is None else f"{r.promote_margin:g}", id="f-promote-margin",
                          placeholder=f"{jobspec.DEFAULT_PROMOTE_MARGIN:g} (on_eval: share of the live loss)",
                          compact=True),
                )
                yield self._row("Base model", Input(r.base_model, id="f-base-model", compact=True))
                yield self._row("Model (B)", Input(f"{r.model_b:g}", id="f-model-b", compact=True))
                yield self._row("Examples", Input(str(r.examples), id="f-examples", compact=True))
                yield self._row("Epochs", Input(f"{r.epochs:g}", id="f-epochs", compact=True))
                yield self._row(
                    "Flavor",
                    Select(options, value=flavor, allow_blank=False, id="f-flavor", compact=True),
                )
                yield self._row("Timeout", Input("", id="f-timeout", compact=True))
                yield self._row(
                    "Max steps",
                    Input(
                        "" if r.max_steps is None else str(r.max_steps),
                        id="f-max-steps",
                        placeholder="(all)",
                        compact=True,
                    ),
                )
                yield self._row(
                    "Cron", Input("", id="f-cron", placeholder="(run once now)", compact=True)
                )
                yield self._row("Retries", Input(retry_text(r), id="f-retry", placeholder="0 (2 $5: twice, $5 at most)",
                                                 compact=True))
                # every flavor offered here is a GPU one: check the data on a CPU first
                yield Checkbox(
                    "CPU dataset preflight first (~$0.01)",
                    value=True,
                    id="f-preflight",
                    compact=True,
                )
                yield Checkbox("ssh into the job", value=r.ssh, id="f-ssh", compact=True)
            yield Static(id="submit-estimate")
            yield Static(id="submit-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Submit (ctrl+s)", variant="primary", id="submit")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#f-tenant", Input).focus()
        self._show_kind_rows()
        self._recompute()

    def _kind(self) -> str:
        return str(self.query_one("#f-kind", Select).value)

    def _show_kind_rows(self) -> None:
        kind = self._kind()
        for row_id, kinds in KIND_ROWS:
            self.query_one(f"#{row_id}").display = kind in kinds

    # -- reading the form ------------------------------------------------------------------

    def _value(self, field_id: str) -> str:
        return self.query_one(f"#{field_id}", Input).value.strip()

    def _promotion(self) -> tuple[str | None, float | None]:
        """(promote, promote_margin): None for manual (the default); a margin for on_eval only."""
        promote = str(self.query_one("#f-promote", Select).value)
        margin = None
        if promote == "on_eval" and self._value("f-promote-margin"):
            margin = self._number("f-promote-margin", "margin")
            if not 0 <= margin < 1:
                raise SubmissionError(
                    f"margin must be a share of the live loss, at least 0 and below 1, got {margin:g}")
        return (None if promote == "manual" else promote), margin

    def _number(self, field_id: str, name: str, kind: type = float) -> float:
        text = self._value(field_id)
        try:
            value = kind(text)
        except ValueError:
            raise SubmissionError(
                f"{name}: {text!r} is not a {'whole ' if kind is int else ''}number"
            ) from None
        return value

    def read_request(self) -> tuple[TrainingRequest, str | None]:
        """The request the form describes (raises SubmissionError with a reason)."""
        flavor = self.query_one("#f-flavor", Select).value
        max_steps_text = self._value("f-max-steps")
        max_steps = None
        if max_steps_text:
            max_steps = int(self._number("f-max-steps", "max steps", int))
            if max_steps < 1:
                raise SubmissionError("max steps must be at least 1")
        timeout_text = self._value("f-timeout")
        timeout = None
        if timeout_text and self._timeout_edited:
            try:
                timeout = parse_timeout(timeout_text)
            except CostInputError as exc:
                raise SubmissionError(str(exc)) from None
        cron_text = self._value("f-cron")
        cron = None
        if cron_text:
            try:
                cron = normalize_cron(cron_text)
            except CostInputError as exc:
                raise SubmissionError(str(exc)) from None
        kind = self._kind()
        promote, margin = self._promotion()
        retry, retry_max_usd = parse_retry(self._value("f-retry"))
        req = replace(
            self.initial,
            tenant=self._value("f-tenant"),
            dataset=self._value("f-dataset"),
            hub_model_id=self._value("f-hub-model-id") or None,
            promote=promote,
            promote_margin=margin,
            base_model=self._value("f-base-model"),
            model_b=self._number("f-model-b", "model size"),
            examples=int(self._number("f-examples", "examples", int)),
            epochs=self._number("f-epochs", "epochs"),
            flavor=str(flavor),
            max_steps=max_steps,
            timeout_seconds=timeout,
            ssh=self.query_one("#f-ssh", Checkbox).value,
            scheduled=cron is not None,
            kind=kind,
            encoder=str(self.query_one("#f-encoder", Select).value) if kind == "embedding" else None,
            full=kind == "builder" and self.query_one("#f-full", Checkbox).value,
            unsloth=kind in UNSLOTH_KINDS and self.query_one("#f-unsloth", Checkbox).value,
            rewards=(self._value("f-rewards").replace(" ", "") or None) if kind == "grpo" else None,
            retry=retry,
            retry_max_usd=retry_max_usd,
        )
        if not req.base_model:
            raise SubmissionError("base model is required")
        if promote is not None and not req.hub_model_id:
            raise SubmissionError(f"promote {promote}: name the Hub repo whose live tag it moves")
        return req, cron

    def _build(self) -> SubmitResult:
        req, cron = self.read_request()
        if why := jobspec.fit_problem(req, self.prices):
            raise SubmissionError(why)
        sub = jobspec.build_submission(
            req,
            backend_kind=self.backend_kind,
            timeout_buffer=self.timeout_buffer,
            timeout_overhead_s=self.timeout_overhead_s,
            token=self.token,
            prices=self.prices,
            owners=self.owners,
        )
        preflight = self.query_one("#f-preflight", Checkbox).value
        return SubmitResult(req, sub, cron, preflight)

    def _recompute(self) -> SubmitResult | None:
        estimate = self.query_one("#submit-estimate", Static)
        error = self.query_one("#submit-error", Static)
        try:
            result = self._build()
        except (SubmissionError, CostInputError, KeyError) as exc:
            error.update(Text(str(exc).strip("'\""), style="bold red"))
            estimate.update("")
            return None
        sub = result.submission
        if not self._timeout_edited:
            self._auto_timeout = format_duration(sub.timeout_seconds)
            box = self.query_one("#f-timeout", Input)
            if not box.has_focus:  # never rewrite the field under the user's cursor (an erased one
                box.value = self._auto_timeout  # stays empty, meaning the padded value, until left)
        text = Text()
        text.append(f"est {format_duration(sub.estimate_hours * 3600)} ", style="bold")
        text.append(f"${sub.estimate_usd:.2f}", style="bold green")
        text.append(f" on {sub.flavor}; timeout {format_duration(sub.timeout_seconds)}")
        if not self._timeout_edited:
            text.append(f" {sub.timeout_rule}", style="dim")
        if result.preflight:
            data_kind = jobspec.preflight_request(result.request).validates
            text.append(f" + preflight ~$0.01 ({data_kind} data)", style="dim")
        memory = self._memory(result.request)
        if memory:
            text.append(f"\nGPU memory {memory}", style="dim")
        text.append(f"\nweights to {sub.destination}", style="dim")
        if result.schedule:
            text.append(f"\nscheduled: {describe_cron(result.schedule)}", style="cyan")
        estimate.update(text)
        error.update("")
        return result

    def _memory(self, req: TrainingRequest) -> str:
        """The run's GPU-memory estimate on its flavor, in words ('' when there is none)."""
        try:
            return vram.fit(req.run_shape(), self.prices.get(req.flavor)).describe()
        except (vram.FitError, KeyError):
            return ""

    # -- events ----------------------------------------------------------------------------

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "f-timeout":
            value = event.value.strip()
            self._timeout_edited = bool(value) and value != self._auto_timeout
        elif event.input.id == "f-tenant":
            self._follow_tenant()
        self._recompute()

    def _follow_tenant(self) -> None:
        """The tenant changed: a known tenant's own dataset and Hub repo from the fleet; for any
        other tenant, none in place of what the form filled in (one typed by hand stays: this
        change may arrive after the user typed the dataset for the new tenant)."""
        tenant = self._value("f-tenant")
        if tenant == self._tenant:
            return
        self._tenant = tenant
        request = self.known.get(tenant)
        for field_id, attr in FOLLOW_TENANT:
            box = self.query_one(f"#{field_id}", Input)
            if request is not None:
                value = getattr(request, attr) or ""
            elif box.value.strip() != self._filled[field_id].strip():
                continue
            else:
                value = ""
            if attr == "hub_model_id" and not value and tenant:
                value = jobspec.hub_model_id_for(tenant, self.destination) or ""
            box.value = self._filled[field_id] = value

    def on_input_blurred(self, event: Input.Blurred) -> None:
        if event.input.id == "f-timeout" and not self._timeout_edited:
            self._recompute()  # left empty (or as padded): show the padded value again

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "f-kind":
            self._show_kind_rows()
        self._recompute()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        self._recompute()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "submit":
            self.action_submit()
        else:
            self.dismiss(None)

    def action_submit(self) -> None:
        result = self._recompute()
        if result is None:
            self.app.bell()  # refused: the form's error line says why (no toast over the form)
            return
        self.dismiss(result)

    def action_cancel(self) -> None:
        self.dismiss(None)


def retry_text(req: TrainingRequest) -> str:
    """The Retries field of a request: `2`, `2 $5` (its cost cap), empty for none."""
    if not req.retry:
        return ""
    return f"{req.retry} ${req.retry_max_usd:g}" if req.retry_max_usd is not None else str(req.retry)


def parse_retry(text: str) -> tuple[int, float | None]:
    """`2` -> (2, None), `2 $5` -> (2, 5.0): how many retries and their cost cap (the fleet file's
    `retry` and `retry_max_usd`); raises SubmissionError naming the field."""
    parts = text.split()
    if not parts:
        return 0, None
    try:
        count = int(parts[0])
        cap = float(parts[1].removeprefix("$")) if len(parts) == 2 else None
    except ValueError:
        count, cap = -1, None
    if len(parts) > 2 or not 0 <= count <= 10 or (cap is not None and not 0 <= cap <= 100_000):
        raise SubmissionError(f"retries: {text!r} is not a count from 0 to 10 and an optional cap ($5)")
    return count, cap
