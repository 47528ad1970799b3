"""How every `--json` output writes its figures: the one place money, hours and ratios are rounded.

Costs and projections are sums and products of floats, and `json.dumps` writes each float's every
digit, float noise included: `0.8640000000000001` for a $0.864 run. :func:`dumps` writes each float
with :data:`SIGNIFICANT` significant digits: the noise goes (`0.864`), every real digit stays (a
$10,000,000 month to a tenth of a cent, a $0.0001 minute to its last digit), and a figure read back
equals the one computed to within a part in 10^9. Standard library only.
"""

from __future__ import annotations

import json
import math
from typing import Any

SIGNIFICANT = 10


def figure(value: float) -> float:
    """`value` to SIGNIFICANT significant digits (a NaN or an infinity as it is)."""
    return float(f"{value:.{SIGNIFICANT}g}") if math.isfinite(value) else value


def rounded(doc: Any) -> Any:
    """`doc` with every float in it (in dicts, lists and tuples, at any depth) through :func:`figure`."""
    if isinstance(doc, float):
        return figure(doc)
    if isinstance(doc, dict):
        return {key: rounded(value) for key, value in doc.items()}
    if isinstance(doc, list | tuple):
        return [rounded(value) for value in doc]
    return doc


def dumps(doc: Any, **kwargs: Any) -> str:
    """`json.dumps` of `doc` with its figures rounded (:func:`rounded`); `kwargs` go to json.dumps."""
    return json.dumps(rounded(doc), **kwargs)
