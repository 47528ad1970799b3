"""A DataTable whose rows are drawn by key, rewriting only the cells whose text changed.

The jobs and fleet tables refresh every few seconds; most refreshes change a cell or two, so a
row is compared with the text it was last drawn with and only the differing cells are updated
(`clear()` would also throw the cursor away). The comparison is on plain values, before any
renderable is built: a row whose values did not change costs a tuple comparison, and one that
did builds only its cells (`rich.Text` objects cost far more than the strings they hold; at
10,000 tenants building them for every row on every update took hundreds of milliseconds).

The highlighted row is the selection: whatever moved the cursor (a key, a filter, a re-sort, a
refresh that removed the row under it), `announce_selection` posts the table's selection message
once the key under the cursor changed, so everything that follows the selection shows that row.

A table may have a `detail` line (a Static under it): the highlighted row said whole, wrapped
(`detail_text`), kept in step with the row's cells, so what a narrow terminal cuts off (a
failure reason, the cost at the timeout, the live version) is read without scrolling sideways.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from rich.text import Text
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable, Static

from console.ui.widgets.quiet import update_if_changed


class KeyedTable(DataTable):
    """Rows keyed by an id; `column_keys` name the columns in the order cells are given."""

    column_keys: tuple[str, ...] = ()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._cells: dict[str, tuple[str, ...]] = {}
        """row key -> the plain text of its cells as last drawn"""
        self._selected: str | None = None
        """The key of the highlighted row, as last announced."""
        self.detail: Static | None = None
        """The line under the table that says the highlighted row whole (None: no such line)."""

    def selection_message(self, key: str | None) -> Message | None:
        """The message that says row `key` is now the highlighted one (None: the table is empty);
        a table whose selection nobody follows posts none."""
        return None

    def detail_text(self, key: str, values: tuple[str, ...]) -> Text | None:
        """Row `key` said whole for the `detail` line, from its cells' plain `values`."""
        return None

    def show_detail(self) -> None:
        """Say the highlighted row on the `detail` line (blank when the table is empty)."""
        if self.detail is None:
            return
        key = self._selected
        values = self._cells.get(key) if key is not None else None
        text = self.detail_text(key, values) if key is not None and values is not None else None
        update_if_changed(self.detail, text if text is not None else Text(""))

    def announce_selection(self) -> None:
        """Post `selection_message` if the row under the cursor is not the one last announced."""
        key = self.key_at_cursor()
        if key == self._selected:
            return
        self._selected = key
        self.show_detail()
        message = self.selection_message(key)
        if message is None:
            return
        # The table is the sender, whoever's handler moved the cursor: Textual stops a bubbling
        # message at its sender's parent, so one made while the jobs pane applies a filter (the
        # pane is the table's parent) would never reach the app, and the log, details and
        # metrics would stay on a job the table no longer highlights.
        self.post_message(message.set_sender(self))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self.announce_selection()

    def put_row(
        self, key: str, values: tuple[str, ...], render: Callable[[], Sequence[Text]], *, shown: bool
    ) -> bool:
        """Draw row `key` (`shown`: it is already in the table); True when it was added.

        `values` are the row's cells as plain strings, one per column, which decide what is
        redrawn (a cell's style must follow from its row's values); `render()` builds the cells
        and is called only when something is to be drawn."""
        if shown:
            before = self._cells.get(key)
            if before == values:
                return False
            before = before or (None,) * len(values)
            cells = render()
            for column, cell, new, old in zip(self.column_keys, cells, values, before, strict=True):
                if new != old:
                    self.update_cell(key, column, cell)
        else:
            self.add_row(*render(), key=key)
        self._cells[key] = values
        if shown and key == self._selected:
            self.show_detail()
        return not shown

    def drop_row(self, key: str) -> None:
        self.remove_row(key)
        self._cells.pop(key, None)

    def drop_rows_except(self, keep: Collection[str]) -> list[str]:
        """Drop every drawn row whose key is not in `keep`; returns the dropped keys."""
        gone = [key for key in self._cells if key not in keep]
        for key in gone:
            self.drop_row(key)
        return gone

    def key_at_cursor(self) -> str | None:
        """The key of the row under the cursor (None in an empty table)."""
        if self.row_count and 0 <= self.cursor_row < self.row_count:
            return self.coordinate_to_cell_key(Coordinate(self.cursor_row, 0)).row_key.value
        return None

    def move_cursor_to(self, key: str | None) -> None:
        """Put the cursor back on row `key` after rows moved (nothing if it is not drawn)."""
        if key is not None and key in self._cells:
            index = self.get_row_index(key)
            if index != self.cursor_row:
                self.move_cursor(row=index, animate=False)
