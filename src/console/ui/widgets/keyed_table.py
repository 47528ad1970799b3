"""A DataTable whose rows are drawn by key, rewriting only the cells whose text changed.

The jobs and fleet tables refresh every few seconds; most refreshes change a cell or two, so a
row is compared with the text it was last drawn with and only the differing cells are updated
(`clear()` would also throw the cursor away).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import DataTable


class KeyedTable(DataTable):
    """Rows keyed by an id; `column_keys` name the columns in the order cells are given."""

    column_keys: tuple[str, ...] = ()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._cells: dict[str, tuple[str, ...]] = {}
        """row key -> the plain text of its cells as last drawn"""

    def put_row(self, key: str, cells: Sequence[Text], *, shown: bool) -> bool:
        """Draw row `key` (`shown`: it is already in the table); True when it was added."""
        plain = tuple(c.plain for c in cells)
        if shown:
            before = self._cells.get(key) or (None,) * len(cells)
            for column, cell, new, old in zip(self.column_keys, cells, plain, before, strict=True):
                if new != old:
                    self.update_cell(key, column, cell)
        else:
            self.add_row(*cells, key=key)
        self._cells[key] = plain
        return not shown

    def drop_row(self, key: str) -> None:
        self.remove_row(key)
        self._cells.pop(key, None)
