"""The what-if's fleet projection is `estimate_run` x runs per month, tenant by tenant, to the bit:
with a changed price, more epochs, a calibration, Unsloth; and it refuses what estimate_run
refuses."""

from __future__ import annotations

from dataclasses import replace

import pytest

from console.costs import Calibration, FlavorCalibration, RunSpec, estimate_run
from console.cron import runs_per_month
from console.inputs import CostInputError
from console.prices import shipped_price_book
from console.scenario import fleet_projection

CRONS = ("0 3 * * 1", "30 2 * * *", "0 4 1 * *", "*/20 * * * *", "0 0 L * *")
FLAVORS = ("l4x1", "a10g-small", "t4-small", "a10g-large")


def fleet(n: int) -> list[tuple[RunSpec, str]]:
    return [(RunSpec((0.5, 1, 3.0, 7)[i % 4], 500 + (i * 37) % 4000, (1.0, 2.5, 3)[i % 3],
                     FLAVORS[i % 4], unsloth=i % 5 == 0), CRONS[i % 5]) for i in range(n)]


def by_estimates(pairs, prices, *, epochs_delta=0.0, calibration=None) -> float:
    total = 0.0
    for spec, cron in pairs:
        factor = calibration.factor_for(spec.flavor) if calibration else 1.0
        est = estimate_run(replace(spec, epochs=spec.epochs + epochs_delta), prices, calibration_factor=factor)
        total += est.cost_usd * runs_per_month(cron)
    return total


def test_the_projection_is_the_sum_of_the_estimates_to_the_bit():
    prices = shipped_price_book()
    l4 = prices.flavors["l4x1"]
    dearer = replace(prices, flavors={**prices.flavors, "l4x1": replace(l4, price_per_hour=l4.price_per_hour * 1.2)})
    cal = Calibration({"l4x1": FlavorCalibration("l4x1", 0.7, 3, 10.0, 5.0)}, 1.3, 5)
    pairs = fleet(500)
    assert fleet_projection(pairs, prices) == by_estimates(pairs, prices)
    assert fleet_projection(pairs, dearer) == by_estimates(pairs, dearer)
    assert fleet_projection(pairs, prices, epochs_delta=1.0) == by_estimates(pairs, prices, epochs_delta=1.0)
    assert fleet_projection(pairs, prices, calibration=cal) == by_estimates(pairs, prices, calibration=cal)
    assert fleet_projection([], prices) == 0.0


@pytest.mark.parametrize("bad", [
    (RunSpec(0.0, 1000, 3.0, "l4x1"), "model_b"),
    (RunSpec(1.0, 1000, 3.0, "cpu-basic"), "CPU flavor"),
    (RunSpec(1.0, 1000, 3.0, "nope"), "unknown flavor"),
    (RunSpec(1.0, float("nan"), 3.0, "l4x1"), "examples"),
    (RunSpec(True, 1000, 3.0, "l4x1"), "model_b"),
])
def test_it_refuses_what_estimate_run_refuses(bad):
    spec, why = bad
    with pytest.raises(CostInputError, match=why):
        estimate_run(spec)
    with pytest.raises(CostInputError, match=why):
        fleet_projection(fleet(3) + [(spec, "0 3 * * 1")])
