"""The last picture the console showed, kept so the next start can paint it before reading anything.

The job rows are the cache's own table (`JobCache.page`); what else the screens show is derived
from data the console does not keep (every schedule, the whole ledger), so the result is kept as
it was shown: the fleet rows and the ledger summary, as JSON in the cache's ``meta`` table, with
the time their data was read. A start paints them marked with that age and replaces them as soon
as fresh data arrives.

Imports the fleet and the ledger only inside the functions that rebuild their rows (the jobs tab
paints before either is imported); no Textual, no console.ui or console.server.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import fields, is_dataclass
from datetime import UTC, datetime
from typing import Any

from console.cache.store import JobCache

SEEN_AT = "seen_at"
FLEET = "fleet"
LEDGER = "ledger"


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"$t": value.timestamp()}
    raise TypeError(f"cannot keep {type(value).__name__} in the snapshot")


def _decode(obj: dict[str, Any]) -> Any:
    if set(obj) == {"$t"}:
        return datetime.fromtimestamp(obj["$t"], UTC)
    return obj


def _dumps(value: Any) -> str:
    return json.dumps(value, default=_encode, separators=(",", ":"))


def _loads(text: str | None) -> Any:
    if not text:
        return None
    try:
        return json.loads(text, object_hook=_decode)
    except ValueError:
        return None


def save_seen(cache: JobCache, at: datetime) -> None:
    """The job rows in the cache are as the API showed them at `at`."""
    cache.set_meta(SEEN_AT, str(at.timestamp()))


def seen_at(cache: JobCache) -> datetime | None:
    """When the data the snapshot shows was read (None: there is no snapshot yet)."""
    value = cache.get_meta(SEEN_AT)
    try:
        return datetime.fromtimestamp(float(value), UTC) if value else None
    except ValueError:
        return None


def save_fleet(cache: JobCache, rows: list[Any]) -> None:
    """Keep the fleet rows (`console.fleet.TenantRow`) as the fleet tab shows them, a row at a time:
    only the rows that are not the very objects last written or read are written (a read that
    found a row unchanged keeps the row it held: `refresh_keep.keep_fleet`; a changed row, an
    outcome read later too, is a new object: `Refresher.apply_outcomes`). At 10,000 tenants the
    whole fleet is 14 MB of JSON: written whole for one changed row, it was the console's memory
    peak after each whole re-read."""
    with cache.fleet_lock:  # two writers at once: each writes what differs from the other's rows
        kept = cache.fleet_kept
        if len(kept) == len(rows) and all(kept.get(r.tenant) is r for r in rows):
            return
        tenants = [r.tenant for r in rows]
        gone = kept.keys() - set(tenants) if kept else ()
        moved = list(kept) != tenants
        changed = ((r.tenant, i, _dumps(_record(r))) for i, r in enumerate(rows) if kept.get(r.tenant) is not r)
        cache.put_fleet(changed, gone, tenants if moved and kept else None)
        cache.fleet_kept = {r.tenant: r for r in rows}


def load_fleet(cache: JobCache) -> list[Any] | None:
    """The kept fleet rows, or None when there are none (or they no longer read)."""
    docs = cache.fleet_docs()
    data: Any = (_loads(doc) for doc in docs)
    first = next(data, None)
    if first is None:  # none kept row by row: the older single-value form, if any
        data = _loads(cache.get_meta(FLEET))
        if not isinstance(data, list):
            return None
    else:
        data = itertools.chain((first,), data)
    from console.fleet import TenantRow
    from console.jobspec import TrainingRequest

    names = {f.name for f in fields(TenantRow)}
    request_names = {f.name for f in fields(TrainingRequest)}
    rows = []
    try:
        for item in data:
            item = {k: v for k, v in item.items() if k in names}
            request = item.get("request")
            if isinstance(request, dict):
                item["request"] = TrainingRequest(**{k: v for k, v in request.items() if k in request_names})
            rows.append(TenantRow(**item))
    except (TypeError, ValueError, AttributeError):
        return None
    # rows read from the older form are not in the table: the next save writes every row
    cache.fleet_kept = {r.tenant: r for r in rows} if first is not None else {}
    return rows


def save_ledger(cache: JobCache, summary: Any) -> None:
    """Keep the ledger summary (`console.ledger.LedgerSummary`) as the costs tab shows it: its
    10,000 tenants and schedules encoded a record at a time, never all as dicts at once."""
    head = _dumps(_summary_dict(summary))  # '{...}': the lists go before its closing brace
    parts, sep = [head[:-1]], ("," if head != "{}" else "")
    for name in _RECORD_LISTS:
        parts += [sep, json.dumps(name), ":[", ",".join(_dumps(_record(r)) for r in getattr(summary, name)), "]"]
        sep = ","
    parts.append("}")
    cache.set_meta(LEDGER, "".join(parts))


_RECORD_LISTS = ("by_tenant", "schedules")


def _summary_dict(summary: Any) -> dict[str, Any]:
    """`asdict(summary)` without its deep copy, and without its two lists of records
    (`_RECORD_LISTS`: 10,000 schedules and 10,000 tenants, encoded a record at a time)."""
    d = {f.name: getattr(summary, f.name) for f in fields(summary) if f.name not in _RECORD_LISTS}
    d["by_month"] = dict(summary.by_month)
    d["unknown_jobs"] = list(summary.unknown_jobs)
    return d


def _record(record: Any) -> dict[str, Any]:
    """A record as `asdict` makes it, without its deep copy: its fields, a record in a field as
    a dict too (the fleet rows' training request); any other value as it is."""
    names = _FIELD_NAMES.get(type(record))
    if names is None:
        names = _FIELD_NAMES[type(record)] = tuple(f.name for f in fields(record))
    out = {}
    for name in names:
        value = getattr(record, name)
        kind = type(value)
        out[name] = value if kind in _PLAIN or not (kind in _FIELD_NAMES or is_dataclass(value)) else _record(value)
    return out


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_PLAIN = frozenset({str, int, float, bool, type(None), datetime})


def load_ledger(cache: JobCache) -> Any | None:
    """The kept ledger summary, or None."""
    data = _loads(cache.get_meta(LEDGER))
    if not isinstance(data, dict):
        return None
    from console.ledger import LedgerSummary, ScheduleForecast, TenantSpend

    try:
        data["by_tenant"] = [TenantSpend(**t) for t in data.get("by_tenant", [])]
        data["schedules"] = [ScheduleForecast(**f) for f in data.get("schedules", [])]
        names = {f.name for f in fields(LedgerSummary)}
        return LedgerSummary(**{k: v for k, v in data.items() if k in names})
    except (TypeError, ValueError):
        return None
