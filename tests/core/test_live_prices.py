"""Live prices from the backend's hardware list, merged with the shipped table, as the estimates and
the what-if use them: per-minute and per-hour prices, flavors only the backend lists (guidance and
speed from their GPU family, or from GPU memory), shipped flavors it does not list, and lists that
say nothing usable."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from console.costs import RunSpec, estimate_run
from console.prices import (
    PRICES_READ_ON,
    SHIPPED_FLAVORS,
    family_multiplier,
    price_book_from_hardware,
    shipped_price_book,
)


def hw(name, cost, unit="minute", model=None, quantity="1", vram=None):
    acc = None if model is None else SimpleNamespace(model=model, quantity=quantity, vram=vram)
    return SimpleNamespace(name=name, unit_cost_usd=cost, unit_label=unit, accelerator=acc)


def test_a_per_minute_price_is_read_as_sixty_times_per_hour_and_an_hourly_one_as_it_is():
    book = price_book_from_hardware([hw("l4x1", 0.015), hw("t4-small", 0.5, unit="hour"),
                                     hw("a10g-small", 0.02, unit="Minute"), hw("cpu-basic", 0.02, unit=None)])
    assert book.price_per_hour("l4x1") == pytest.approx(0.90)
    assert book.price_per_hour("t4-small") == pytest.approx(0.50)
    assert book.price_per_hour("a10g-small") == pytest.approx(1.20)
    assert book.price_per_hour("cpu-basic") == pytest.approx(0.02)  # no unit: per hour
    assert book.source == "live"


def test_a_shipped_flavor_listed_live_keeps_its_guidance_without_a_note():
    book = price_book_from_hardware([hw("l4x1", 0.015, model="L4", vram="24 GB")])
    shipped = shipped_price_book().get("l4x1")
    live = book.get("l4x1")
    assert (live.fits, live.max_model_b, live.gpu, live.gpu_memory_gb) == (
        shipped.fits, shipped.max_model_b, shipped.gpu, shipped.gpu_memory_gb)
    assert live.note == ""


def test_items_without_a_name_or_a_price_are_ignored_and_nothing_usable_means_shipped_prices():
    book = price_book_from_hardware([hw(None, 0.01), hw("l4x1", None), SimpleNamespace()])
    assert book.source == "shipped"
    assert book.describe().startswith("shipped prices")
    assert price_book_from_hardware([]).source == "shipped"


def test_shipped_flavors_the_backend_does_not_list_keep_their_price_with_a_note():
    book = price_book_from_hardware([hw("l4x1", 0.015)], detail="hardware of test")
    a100 = book.get("a100-large")
    assert a100.price_per_hour == 2.50
    assert a100.note == f"not in the backend's hardware list: shipped price of {PRICES_READ_ON}"
    missing = len(SHIPPED_FLAVORS) - 1
    assert book.detail == f"hardware of test; {missing} flavor(s) it does not list at shipped prices"
    assert book.describe() == f"live prices from the backend ({book.detail})"
    assert book.notes()["a100-large"] == a100.note and "l4x1" not in book.notes()


def test_a_full_list_has_no_missing_note():
    book = price_book_from_hardware([hw(f.name, f.price_per_hour, unit="hour") for f in SHIPPED_FLAVORS])
    assert book.detail == "list_jobs_hardware"
    assert book.notes() == {}


def test_a_gpu_flavor_only_the_backend_lists_takes_guidance_from_its_gpu_family():
    book = price_book_from_hardware([hw("l4x2", 0.03, model="L4", quantity="2", vram="48 GB")])
    f = book.get("l4x2")
    l4x1 = shipped_price_book().get("l4x1")
    assert f.is_gpu and f.gpu == "2x L4" and f.gpu_memory_gb == 48
    assert f.price_per_hour == pytest.approx(1.80)
    # the shipped L4 flavor with the most GPUs not above two: l4x1
    assert (f.fits, f.max_model_b) == (l4x1.fits, l4x1.max_model_b)
    assert f.multiplier == 1.2
    assert f.note == ("listed by the backend only: size guidance of l4x1 (same GPU, 1x L4); "
                      "speed same GPU (L4) as l4x1")
    assert book.multiplier("l4x2") == (1.2, "assumed: same GPU (L4) as l4x1")
    # and it can be estimated on
    est = estimate_run(RunSpec(1, 1000, 1, "l4x2"), book)
    assert est.cost_usd == pytest.approx(0.1 * 1.2 * 1.80)


def test_more_gpus_of_a_family_take_the_biggest_shipped_flavor_of_that_family_below_them():
    book = price_book_from_hardware([hw("a10g-largex3", 0.05, model="A10G", quantity="3", vram="72 GB")])
    f = book.get("a10g-largex3")
    x2 = shipped_price_book().get("a10g-largex2")
    assert (f.fits, f.max_model_b) == (x2.fits, x2.max_model_b)
    assert "size guidance of a10g-largex2 (same GPU, 2x A10G)" in f.note


def test_an_unknown_gpu_takes_guidance_from_gpu_memory_and_the_slowest_known_speed():
    book = price_book_from_hardware([hw("b200", 0.1, model="B200", quantity="1", vram="180 GB")])
    f = book.get("b200")
    # the shipped GPU flavor with the most capacity within 180 GB: h200 (141 GB, 70B)
    assert (f.fits, f.max_model_b) == ("30-70B", 70)
    assert f.gpu_memory_gb == 180
    assert f.multiplier == 2.0  # the slowest known GPU (T4), so estimates are never short
    assert f.note == ("listed by the backend only: size guidance of h200 (141 GB, no more GPU memory); "
                      "speed no shipped flavor has a B200; as slow as t4-small, the slowest known")


def test_a_gpu_smaller_than_every_shipped_one_gets_no_size_guidance():
    f = price_book_from_hardware([hw("tiny", 0.01, model="X1", vram="8 GB")]).get("tiny")
    assert (f.fits, f.max_model_b) == ("", 0.0)
    assert "no size guidance (no shipped flavor to compare with)" in f.note


@pytest.mark.parametrize("quantity", ["", "0", "two", None])
def test_an_unreadable_gpu_count_is_one(quantity):
    f = price_book_from_hardware([hw("l4-odd", 0.015, model="L4", quantity=quantity, vram="24GB")]).get("l4-odd")
    assert f.gpu == "1x L4"
    assert "size guidance of l4x1" in f.note


def test_a_cpu_flavor_only_the_backend_lists_is_not_for_training():
    f = price_book_from_hardware([hw("cpu-mega", 0.05)]).get("cpu-mega")
    assert not f.is_gpu and f.gpu == "" and f.gpu_memory_gb == 0 and f.max_model_b == 0.0
    assert f.price_per_hour == pytest.approx(3.0)
    assert f.note == "listed by the backend only (CPU: not for training)"


@pytest.mark.parametrize(("model", "expected"), [
    ("1x RTX PRO 6000", (0.7, "assumed: same GPU (1x RTX PRO 6000) as rtx-pro-6000")),
    ("rtx pro 6000", (0.7, "assumed: same GPU (rtx pro 6000) as rtx-pro-6000")),
    ("T4", (2.0, "assumed: same GPU (T4) as t4-small")),
    ("A10G", (1.3, "assumed: same GPU (A10G) as a10g-small")),
    ("", (2.0, "assumed: no shipped flavor has a GPU of this kind; as slow as t4-small, the slowest known")),
])
def test_a_gpu_familys_speed_is_its_slowest_shipped_flavor(model, expected):
    assert family_multiplier(model) == expected
