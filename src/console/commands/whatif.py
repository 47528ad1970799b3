"""`console whatif`: what a fleet scenario costs per run and per month, headless.

Flags keep these names (scripts call them): --model-b --examples --epochs --flavor --tenants
--cadence --plan --seats --unsloth --json. `--reference` prints the reference document's §4 tables
recomputed by the model. `--calibrated` adds the estimate calibrated from the cost ledger's real
runs (how many runs it rests on, the factor per flavor) and the cheaper flavors that still fit; its
JSON adds a `calibrated` object and `cheaper_flavors`, every other key stays as it is.

GPU memory: the run (and the builder model's) is estimated on its flavor (`console.vram`: weights at
the dtype the GPU trains in, LoRA or full fine-tune optimizer state, activations at
`--batch-size` x `--seq-len`; `--model-config` reads the shape from a `config.json`, else a
Llama-family shape of `--model-b` is assumed). A run that does not fit is refused (exit 1) with
the estimate and the cheapest flavor that fits; one that fits prints a `Memory:` line, and its
JSON a `memory` object. A multi-GPU flavor counts every GPU (LoRA split by layers, a full
fine-tune sharded), and the line says how.

Size: a full fine-tune over 7B (`--method full`, `--builder-full`) is priced with a warning that a
submission refuses it, and so is a `--model-config` whose parameter count disagrees with
`--model-b` (stderr `warning:` lines; JSON `warnings`).
"""

from __future__ import annotations

import argparse

from console.commands import _json


def register(sub, add_common) -> None:
    from console.kinds import TENANT_KINDS
    p = sub.add_parser(
        "whatif",
        help="what a fleet scenario costs (per run, timeout, per month)",
        description="Estimate a fleet scenario with the reference cost model. Defaults come from the config.",
    )
    add_common(p)
    p.add_argument("--model-b", type=float, default=3.0, help="model size in billions of parameters (default 3)")
    p.add_argument("--examples", type=int, default=1000, help="training examples per run (default 1000)")
    p.add_argument("--epochs", type=float, default=3.0, help="epochs per run (default 3)")
    p.add_argument("--max-steps", type=int, metavar="N",
                   help="stop each run after N optimizer steps of its recipe's batch, whatever the epochs "
                   "(as a tenant's max_steps does)")
    p.add_argument("--flavor", help="hardware flavor (default: the config's defaults.flavor)")
    p.add_argument("--tenants", default="1", help="number of tenants (default 1)")
    p.add_argument(
        "--cadence", default="weekly", help="cron expression, or weekly / monthly / daily (default weekly)"
    )
    p.add_argument("--plan", help="free | pro | team | enterprise (default: the config's plan)")
    p.add_argument("--seats", type=int, help="seats on the plan (default: the config's seats)")
    p.add_argument("--unsloth", action="store_true", help="train with Unsloth (~2x faster, 4-bit LoRA)")
    p.add_argument("--method", choices=("lora", "full"), default="lora",
                   help="LoRA adapters (default) or a full fine-tune: what the GPU memory estimate assumes")
    p.add_argument("--kind", choices=TENANT_KINDS, default="sft",
                   help="the tenants' training method (DPO, KTO and a reward model put two sequences per example "
                   "on the GPU; a GRPO example costs 8 SFT examples' time: 4 completions, each generated and trained)")
    p.add_argument("--model-config", metavar="PATH",
                   help="the model's config.json (or its folder) for the memory estimate (default: a "
                   "Llama-family shape of --model-b)")
    p.add_argument("--batch-size", type=int, default=4, help="per-device batch size for the memory estimate (4)")
    p.add_argument("--seq-len", type=int, default=1024, help="tokens per sequence for the memory estimate (1024)")
    p.add_argument("--timeout-buffer", type=float,
                   help="timeout = (estimate + overhead) x this (default: config, 1.3)")
    p.add_argument("--timeout-overhead", type=int, metavar="SECONDS",
                   help="seconds of install, downloads and push added before the buffer (default: config, 300)")
    p.add_argument("--builder-model-b", type=float, help="add a builder model of this size (billions)")
    p.add_argument("--builder-examples", type=int, default=3000, help="builder examples (default 3000)")
    p.add_argument("--builder-flavor", default="a100-large", help="builder flavor (default a100-large)")
    p.add_argument("--builder-cadence", default="weekly", help="builder cadence (default weekly)")
    p.add_argument("--builder-full", action="store_true", help="the builder model is a full fine-tune (not LoRA)")
    p.add_argument(
        "--calibrated",
        action="store_true",
        help="also show the estimate calibrated from the cost ledger's real runs, and cheaper flavors",
    )
    p.add_argument("--ledger", metavar="PATH", help="ledger file for --calibrated (default: the user data dir)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--reference", action="store_true", help="print the reference document's tables, recomputed")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from console.commands._common import CommandError, load_config
    from console.config import price_book
    from console.costs import RunSpec, timeout_rule
    from console.cron import describe_cron
    from console.inputs import CostInputError, format_duration, parse_count
    from console.scenario import Scenario, project

    if args.reference:
        return _print_reference(args.json)
    cfg = load_config(args)
    flavor = args.flavor or cfg.defaults.flavor
    try:
        builder = None
        if args.builder_model_b is not None:
            builder = RunSpec(args.builder_model_b, args.builder_examples, args.epochs, args.builder_flavor)
        scenario = Scenario(
            tenants=parse_count("tenants", str(args.tenants)),
            cadence=args.cadence,
            run=_run_spec(args, flavor),
            plan=args.plan or cfg.plan,
            seats=args.seats if args.seats is not None else cfg.seats,
            builder=builder,
            builder_cadence=args.builder_cadence,
            timeout_buffer=args.timeout_buffer or cfg.defaults.timeout_buffer,
            timeout_overhead_s=(
                args.timeout_overhead if args.timeout_overhead is not None else cfg.defaults.timeout_overhead_s
            ),
        )
        proj = project(scenario, price_book(cfg))
        words = describe_cron(scenario.cadence)
        calibrated = _calibrated(args, scenario) if args.calibrated else None
    except CostInputError as exc:
        raise CommandError(str(exc)) from None
    warnings = _size_warnings(args)
    import sys

    try:
        memory = _memory(args, flavor, price_book(cfg))  # inputs checked by the cost model first
    except CommandError:
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        raise

    if args.json:
        out = proj.to_dict()
        out["cadence_words"] = words
        out["memory"] = memory
        out["warnings"] = warnings
        out["kind"] = args.kind
        out["work_examples"] = scenario.run.work()  # SFT examples' worth of GPU time per run
        if calibrated is not None:
            out.update(calibrated)
        print(_json.dumps(out, indent=2))
    else:
        s, e = scenario, proj.per_run
        print(
            f"Scenario: {s.tenants} tenant(s), {s.run.model_b:g}B model, {s.run.examples:,} examples, "
            f"{s.run.epochs:g} epoch(s)"
            + (f" capped at {s.run.max_steps:,} steps of {s.run.batch_size}" if s.run.max_steps else "")
            + f" on {e.flavor}{' with Unsloth' if e.unsloth else ''}"
        )
        print(f"Prices:   {proj.price_source}; {e.flavor} ${e.price_per_hour:.2f}/hr")
        print(f"Model:    hw multiplier {e.multiplier:g} ({e.multiplier_source})")
        if s.run.kind == "grpo":
            print(f"Work:     {_grpo_work(s.run)}")
        print(f"Memory:   {memory['run']['describe']}")
        if "builder" in memory:
            print(f"          builder: {memory['builder']['describe']}")
        print(f"Cadence:  {proj.scenario.cadence} ({words}) = {proj.runs_per_month:.2f} runs/month")
        print(
            f"Per run:  {e.hours:.2f} h, ${e.cost_usd:.2f}, "
            f"timeout {format_duration(e.timeout_seconds)} ({e.timeout_seconds} s)"
        )
        print(f"Timeout:  {timeout_rule(e, s.timeout_buffer)}")
        parts = [f"tenants ${proj.tenants_usd:,.2f}"]
        if proj.builder_per_run is not None:
            b = proj.builder_per_run
            parts.append(f"builder ${proj.builder_usd:,.2f} ({b.hours:.1f} h, ${b.cost_usd:.2f}/run)")
        parts.append(f"plan floor ${proj.plan_floor_usd:,.2f} ({s.plan} x {s.seats})")
        print(f"Monthly:  {' + '.join(parts)} = ${proj.monthly_usd:,.2f}")
        if calibrated is not None:
            _print_calibrated(calibrated)
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not proj.plan_can_run_jobs:
        from console.scenario import plan_refusal

        print(f"warning: {plan_refusal(scenario.plan)}", file=sys.stderr)
    return 0


def _size_warnings(args: argparse.Namespace) -> list[str]:
    """What a submission of this scenario would refuse for its model's size: a full fine-tune over
    7B (reference §2), and a `--model-config` whose count disagrees with `--model-b` (the same
    rules `console.basesize` applies before a run is sent)."""
    from console import vram
    from console.basesize import full_fine_tune_problem

    out = []
    if args.method == "full" and (why := full_fine_tune_problem(args.model_b)):
        out.append(f"{why}; this prices a run that would not be sent (--method lora for one that would)")
    if args.builder_full and args.builder_model_b is not None and (why := full_fine_tune_problem(args.builder_model_b)):
        out.append(f"builder: {why}; this prices a run that would not be sent (drop --builder-full for one that "
                   "would)")
    if args.model_config:
        try:
            config = vram.read_config(args.model_config)
        except vram.FitError:
            return out  # the memory estimate refuses the file, saying why
        est = vram.estimator()
        why = est.size_problem(args.model_b, est.counted_params(config), base=f"--model-config {args.model_config}",
                               declared_as="--model-b", full=args.method == "full")
        if why:
            out.append(f"{why} (a run submitted so is refused)")
    return out


def _run_spec(args: argparse.Namespace, flavor: str):
    """The tenants' run as a job spec would cost it (`TrainingRequest.run_spec`: max_steps counted
    in steps of the kind's recipe batch)."""
    from console.inputs import CostInputError
    from console.jobspec import TrainingRequest

    if args.max_steps is not None and not 1 <= args.max_steps <= 10_000_000:
        raise CostInputError(f"--max-steps must be a whole number from 1 to 10000000, got {args.max_steps}")
    req = TrainingRequest(tenant="whatif", dataset="-", model_b=args.model_b, examples=args.examples,
                          epochs=args.epochs, flavor=flavor, kind=args.kind, unsloth=args.unsloth,
                          max_steps=args.max_steps)
    return req.run_spec()


def _shape(args: argparse.Namespace, *, builder: bool = False):
    """The run's memory shape from the flags (the builder's: its size, LoRA or full, SFT)."""
    from console import vram
    from console.commands._common import CommandError

    config = None
    if args.model_config and not builder:
        try:
            config = vram.read_config(args.model_config)
        except vram.FitError as exc:
            raise CommandError(str(exc)) from None
    if args.batch_size <= 0 or args.seq_len <= 0:
        raise CommandError("--batch-size and --seq-len must be positive")
    if builder:
        method = "full" if args.builder_full else "lora"
        return vram.RunShape(args.builder_model_b, method=method, kind="builder",
                             batch_size=args.batch_size, seq_len=args.seq_len)
    return vram.RunShape(args.model_b, method=args.method, kind=args.kind, batch_size=args.batch_size,
                         seq_len=args.seq_len, unsloth=args.unsloth, config=config)


def _memory(args: argparse.Namespace, flavor: str, prices) -> dict:
    """The GPU-memory fit of the run (and the builder's) on its flavor; refuses one that does not fit."""
    from console import vram
    from console.commands._common import CommandError

    runs = [("run", _shape(args), flavor)]
    if args.builder_model_b is not None:
        runs.append(("builder", _shape(args, builder=True), args.builder_flavor))
    out: dict = {}
    for key, shape, name in runs:
        if name not in prices or not prices.get(name).is_gpu:
            continue  # the cost model says why
        try:
            here = vram.fit(shape, prices.get(name))
            if not here.fits:
                why = vram.refusal(shape, name, prices)
                best = vram.cheapest_fit(shape, prices)
                flag = "--builder-" if key == "builder" else "--"
                tries = [f"{flag}flavor {best.flavor}"] if best else []
                if key == "run" and vram.unsloth_fit(shape, name, prices) is not None:
                    tries.append("--unsloth")
                again = f"; try {' or '.join(tries)}" if tries else ""
                what = "the builder model" if key == "builder" else "the run"
                raise CommandError(f"{what} does not fit {name}: {why}{again}", code=1)
            best = vram.cheapest_fit(shape, prices)
        except vram.FitError as exc:
            raise CommandError(str(exc)) from None
        cheapest = best.flavor if best else None
        note = "" if cheapest in (None, name) else f"; the cheapest flavor that fits is {cheapest}"
        out[key] = {
            **here.as_dict(),
            "cheapest_fitting_flavor": cheapest,
            "describe": f"{here.estimate.describe()}; {here.gpu_gb:g} GB per GPU on {name}: fits{note}",
        }
    return out


def _calibrated(args: argparse.Namespace, scenario) -> dict:
    """The scenario again with the ledger's calibration, and the cheaper flavors that fit."""
    from pathlib import Path

    from console.commands._common import CommandError
    from console.costs import cheaper_flavors_that_fit
    from console.ledger import Ledger, LedgerError, estimate_calibration
    from console.ledger.store import default_path
    from console.scenario import project

    where = Path(args.ledger).expanduser() if args.ledger else default_path()
    if not where.is_file():
        if args.ledger:  # a path given by hand that is not there: say so, create nothing
            raise CommandError(f"--ledger {where}: no such ledger file")
        entries = []  # no ledger yet: the heuristic stands (reading never creates one)
    else:
        try:
            entries = Ledger(where).entries()
        except LedgerError as exc:
            raise CommandError(str(exc)) from None
    cal, basis = estimate_calibration(entries)
    proj = project(scenario, calibration=cal)
    flavor = scenario.run.flavor
    own = cal.per_flavor.get(flavor)
    cheaper = cheaper_flavors_that_fit(scenario.run, calibration=cal if cal.runs else None, run=_shape(args))
    return {
        "calibrated": {
            "hours_per_run": proj.per_run.hours,
            "cost_per_run_usd": proj.per_run.cost_usd,
            "timeout_seconds": proj.per_run.timeout_seconds,
            "monthly_usd": proj.monthly_usd,
            "calibration_factor": proj.per_run.calibration_factor,
            "calibration_spread": cal.spread_for(proj.scenario.run.flavor),
            "calibration_runs": cal.runs,
            "flavor_runs": own.runs if own else 0,
            "factor_source": "flavor" if own else ("all runs" if cal.runs else "none (heuristic)"),
            "runs_from": basis,
            "per_flavor": {
                f.flavor: {"factor": f.factor, "runs": f.runs,
                           "heuristic_error_pct": f.heuristic_error_pct,
                           "calibrated_error_pct": f.calibrated_error_pct}
                for f in cal.per_flavor.values()
            },
        },
        "cheaper_flavors": [
            {"flavor": e.flavor, "hours_per_run": e.hours, "cost_per_run_usd": e.cost_usd,
             "timeout_seconds": e.timeout_seconds}
            for e in cheaper
        ],
    }


def _grpo_work(run) -> str:  # noqa: ANN001 - a costs.RunSpec
    """How the cost model counts a GRPO run (`RunSpec.work`), in words."""
    from console.kinds import GRPO_GENERATIONS, GRPO_WORK_PER_COMPLETION

    per = f"x {GRPO_WORK_PER_COMPLETION:g} (each generated, then trained on) = {run.work():,.0f} SFT examples' time"
    if run.max_steps:
        return f"GRPO: {run.max_steps:,} steps x {run.batch_size} completions {per}"
    return f"GRPO: {run.examples:,} prompts x {run.epochs:g} epoch(s) x {GRPO_GENERATIONS} completions {per}"


def _print_calibrated(c: dict) -> None:
    from console.inputs import format_duration

    cal = c["calibrated"]
    if cal["calibration_runs"] == 0:
        print("Calibrated: no completed runs with cost labels in the ledger yet: the heuristic stands")
    else:
        where = (
            f"{cal['flavor_runs']} run(s) on this flavor"
            if cal["factor_source"] == "flavor"
            else f"all {cal['calibration_runs']} run(s), none on this flavor"
        )
        print(
            f"Calibrated: x{cal['calibration_factor']:.3g} from {where} "
            f"({cal['calibration_runs']} in the ledger"
            + (f"; {cal['calibration_spread']}" if cal.get("calibration_spread") else "")
            + f"): {cal['hours_per_run']:.2f} h, "
            f"${cal['cost_per_run_usd']:.2f}/run, timeout {format_duration(cal['timeout_seconds'])}, "
            f"${cal['monthly_usd']:,.2f}/month"
        )
        if cal["runs_from"] == "local":
            print("            (runs on the local server, timed on this machine's CPU: not HF GPU timings)")
    if c["cheaper_flavors"]:
        best = c["cheaper_flavors"][0]
        print(
            f"Cheaper:    {best['flavor']} fits the model: ${best['cost_per_run_usd']:.2f}/run, "
            f"{best['hours_per_run']:.2f} h"
        )


def _print_reference(as_json: bool) -> int:
    from console import reference as ref

    builder, tenants, fleet, comb = ref.builder_rows(), ref.tenant_rows(), ref.fleet_rows(), ref.combined()
    ok = ref.all_agree()
    memory = ref.memory_disagreements()
    if as_json:
        def run_rows(rows):
            return [
                {
                    "config": r.config,
                    "flavor": r.spec.flavor,
                    "hours": r.time.model,
                    "document_hours": r.time.document,
                    "cost_usd": r.cost.model,
                    "document_cost": r.cost.document,
                    "agrees": r.time.agrees() and r.cost.agrees(),
                    "gpu_memory_gb": round(r.memory.needed_gb, 1),
                    "fits": r.memory.fits,
                }
                for r in rows
            ]

        print(
            _json.dumps(
                {
                    "source": ref.SOURCE,
                    "builder": run_rows(builder),
                    "tenant_adapters": run_rows(tenants),
                    "fleet": [
                        {
                            "tenants": r.tenants,
                            "column": r.column,
                            "monthly_usd": r.figure.model,
                            "monthly_usd_at_4_3": r.at_reference_rate,
                            "document": r.figure.document,
                        }
                        for r in fleet
                    ],
                    "combined": {
                        "tenants_usd": comb.tenants_usd,
                        "builder_usd": comb.builder_usd,
                        "plan_usd": comb.plan_usd,
                        "monthly_usd": comb.total.model,
                        "document": comb.total.document,
                    },
                    "all_agree": ok,
                    "memory_disagreements": memory,
                },
                indent=2,
            )
        )
        return 0 if ok else 1

    def mark(good: bool) -> str:
        return "ok" if good else "DIFFERS"

    print(f"Recomputed from {ref.SOURCE}; shipped prices.\n")
    for title, rows in (("(a) Builder model", builder), ("(b) Per-tenant LoRA adapters", tenants)):
        print(title)
        print(f"  {'Config':<24}{'Flavor':<12}{'Time':>8}{'(doc)':>9}{'Cost':>9}{'(doc)':>9}{'GPU mem':>10}")
        for r in rows:
            held = f"{r.memory.needed_gb:.1f}GB" + ("" if r.memory.fits else "!")
            print(
                f"  {r.config:<24}{r.spec.flavor:<12}{r.time.model:>7.2f}h{r.time.document:>9}"
                f"{'$' + format(r.cost.model, '.2f'):>9}{r.cost.document:>9}{held:>10}  "
                f"{mark(r.time.agrees() and r.cost.agrees())}"
            )
        print()
    print("Monthly fleet scenarios (weekly = a weekly cron's firings per month; the document uses 4.3)")
    print(f"  {'Tenants':<9}{'Column':<22}{'Model':>10}{'at 4.3':>10}{'(doc)':>9}")
    for r in fleet:
        good = r.figure.agrees(r.at_reference_rate)
        print(
            f"  {r.tenants:<9}{r.column:<22}{'$' + format(r.figure.model, ',.2f'):>10}"
            f"{'$' + format(r.at_reference_rate, ',.2f'):>10}{r.figure.document:>9}  {mark(good)}"
        )
    print()
    print(
        "Combined: 100 tenants weekly @ ~$1/run "
        f"${comb.tenants_usd:,.2f} + builder weekly ${comb.builder_usd:,.2f} + Team plan "
        f"${comb.plan_usd:,.2f} = ${comb.total.model:,.2f}/mo (doc {comb.total.document})  "
        f"{mark(ref.combined_agrees(comb))}"
    )
    print()
    if memory:
        print("GPU memory: the document's flavor does not hold a row by the memory estimate (marked !); "
              "its tables cost time, not memory:")
        for note in memory:
            print(f"  {note}")
        print()
        print("Times and costs agree with the document; GPU memory differs (above)." if ok
              else "Some figures differ from the document; GPU memory differs too (above).")
    else:
        print("All figures agree with the document." if ok else "Some figures differ from the document.")
    return 0 if ok else 1
