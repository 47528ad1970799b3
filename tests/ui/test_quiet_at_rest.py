"""A console at rest draws nothing: while refreshes come on time, the status line's "refreshed 0s
ago" stays as it is (a redraw each second was most of a settled console's idle CPU), and it still
says when the last refresh is late and turns STALE."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from textual.app import App, ComposeResult

from console.ui.widgets.status_line import STALE_AFTER_SECONDS, StatusLine

T0 = datetime(2026, 12, 7, 10, 0, tzinfo=UTC)


class CountingStatus(StatusLine):
    drawn: list[str]

    def update(self, content="", *, layout: bool = True) -> None:  # noqa: ANN001
        self.drawn.append(str(getattr(content, "plain", content)))
        super().update(content, layout=layout)


class OneLine(App):
    def __init__(self, now: list[datetime]) -> None:
        super().__init__()
        self.now = now

    def compose(self) -> ComposeResult:
        line = CountingStatus(namespace="acme", plan="pro", backend="local", endpoint="http://127.0.0.1:1",
                              read_only=False, clock=lambda: self.now[0])
        line.drawn = []
        yield line


async def test_refreshes_on_time_leave_the_status_line_undrawn():
    now = [T0]
    app = OneLine(now)
    async with app.run_test(size=(80, 3)):
        line = app.query_one(CountingStatus)
        line.mark_ok(T0)
        drawn = len(line.drawn)
        assert "refreshed 0s ago" in line.drawn[-1]
        for tick in range(1, 40):  # a refresh every 2 s, the line's timer each second
            now[0] = T0 + timedelta(seconds=tick)
            if tick % 2 == 0:
                line.mark_ok(now[0])
            line.refresh_text()
        assert line.drawn[drawn:] == []

        # a refresh that is late is said, and the line turns STALE after STALE_AFTER_SECONDS
        last = line.last_ok
        now[0] = last + timedelta(seconds=6)
        line.refresh_text()
        assert "refreshed 5s ago" in line.drawn[-1]
        now[0] = last + timedelta(seconds=STALE_AFTER_SECONDS + 1)
        line.refresh_text()
        assert "STALE" in line.drawn[-1] and f"last ok {int(STALE_AFTER_SECONDS) + 1}s ago" in line.drawn[-1]
