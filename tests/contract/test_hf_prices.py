"""Live prices merge with the shipped table: `list_jobs_hardware` as HF answers it (a new price, a
flavor only HF lists, most shipped flavors missing) through the price book and the estimates."""

from __future__ import annotations

import pytest
from hf_shapes import hardware

from console.costs import RunSpec, cheaper_flavors_that_fit, estimate_run
from console.inputs import CostInputError
from console.ledger import live_prices
from console.prices import SHIPPED_FLAVORS, price_book_from_hardware, shipped_price_book


@pytest.fixture
def book():
    return price_book_from_hardware(hardware())


def test_hf_prices_win_and_unlisted_shipped_flavors_keep_theirs_with_a_note(book):
    assert book.source == "live"
    assert book.price_per_hour("l4x1") == pytest.approx(0.90)  # 0.015 $/min
    assert book.get("l4x1").fits == shipped_price_book().get("l4x1").fits and not book.get("l4x1").note
    assert {f.name for f in SHIPPED_FLAVORS} <= set(book.flavors)  # nothing HF left out is lost
    a100 = book.get("a100-large")
    assert a100.price_per_hour == 2.50 and "not in the backend's hardware list" in a100.note
    assert "flavor(s) it does not list at shipped prices" in book.describe()
    estimate = estimate_run(RunSpec(13, 1000, 1, "a100-large"), book)  # still estimated
    assert estimate.cost_usd == pytest.approx(0.1 * 13 * 1 * 0.7 * 2.50)


def test_a_flavor_only_hf_lists_gets_guidance_and_speed_from_its_gpu_family(book):
    pro = book.get("rtx-pro-6000x2")
    assert pro.is_gpu and pro.gpu == "2x RTX PRO 6000" and pro.gpu_memory_gb == 192
    assert pro.price_per_hour == pytest.approx(5.50, abs=1e-3)
    assert (pro.fits, pro.max_model_b) == ("13-34B", 34)  # rtx-pro-6000's: same GPU, fewer of them
    assert "size guidance of rtx-pro-6000" in pro.note
    assert book.multiplier("rtx-pro-6000x2") == (0.7, "assumed: same GPU (RTX PRO 6000) as rtx-pro-6000")
    estimate = estimate_run(RunSpec(13, 2000, 1, "rtx-pro-6000x2"), book)
    assert estimate.hours == pytest.approx(0.1 * 13 * 2 * 0.7)
    assert estimate.cost_usd == pytest.approx(estimate.hours * pro.price_per_hour)

    b200 = book.get("b200")  # a GPU no shipped flavor has: guidance by memory, the slowest speed
    assert b200.max_model_b == 70 and "size guidance of h200" in b200.note
    assert book.multiplier("b200")[0] == 2.0 and "slowest known" in book.multiplier("b200")[1]
    assert estimate_run(RunSpec(7, 1000, 1, "b200"), book).hours == pytest.approx(0.1 * 7 * 2.0)
    assert all(o.flavor in book for o in cheaper_flavors_that_fit(RunSpec(7, 1000, 1, "b200"), book))
    with pytest.raises(CostInputError, match="CPU flavor"):
        estimate_run(RunSpec(1, 1000, 1, "cpu-basic"), book)


def test_the_embedded_servers_list_merges_to_the_shipped_table(api):
    live = live_prices(api)
    assert live.source == "live" and set(live.flavors) == {f.name for f in SHIPPED_FLAVORS}
    assert live.notes() == {}  # it lists every shipped flavor
