"""The help screen (`?`) and saving a job's log (`ctrl+s`), in the real app on the embedded server."""

from __future__ import annotations

from tests.jobwait import wait_stage
from tests.ui.conftest import mounted_screen, notes, run_python, screen_text, wait_for, wait_thread
from textual.geometry import Region
from textual.widgets import Input, Static

from console import paths
from console.ui import keys
from console.ui.app import ConsoleApp
from console.ui.screens.confirm import ConfirmScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.prompt import PromptScreen

HELP_TITLE = "Keys (esc closes"



def _on_screen(app) -> str:
    """The terminal's contents: the current screen as composed, modal dialogs over what is below."""
    return screen_text(app)


def _painted(widget) -> list[str]:
    """Every line the widget paints, scrolled into view or not."""
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return [strip.text.rstrip() for strip in strips]


def _table_rows(lines: list[str]) -> list[tuple[str, str, str]]:
    """(key, action, where) rows read back from the help table's painted lines: the header gives
    where each column starts; a row whose key cell is blank continues the row above (wrapped)."""
    header = next(i for i, line in enumerate(lines) if line.split()[:3] == ["Key", "Action", "Where"])
    head = lines[header]
    starts = [head.index("Key"), head.index("Action"), head.index("Where")]
    rows: list[list[str]] = []
    for line in lines[header + 1 :]:
        cells = [line[a:b].strip() for a, b in zip(starts, starts[1:] + [len(line) + 1], strict=True)]
        if not any(cells):
            continue
        if cells[0]:
            rows.append(cells)
        else:
            rows[-1] = [rows[-1][0]] + [f"{a} {b}".strip() for a, b in zip(rows[-1][1:], cells[1:], strict=True)]
    return [(k, a, w) for k, a, w in rows]


async def test_help_shows_every_key_of_the_key_table_scrolls_and_closes(backend, cfg):
    app = ConsoleApp(cfg, backend, refresh_seconds=3600, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0, what="the first refresh")
        await pilot.press("question_mark")
        await mounted_screen(pilot, HelpScreen, what="the help screen")
        assert HELP_TITLE in _on_screen(app)
        table = app.screen.query(Static).last()
        assert _table_rows(_painted(table)) == keys.key_table()

        # At 80x24 the table is taller than the dialog: the keys at its end are a scroll away.
        last_action = " ".join(keys.key_table()[-1][1].split()[:2])  # "Command palette:"
        assert last_action not in _on_screen(app)
        await pilot.press("end")
        await wait_for(pilot, lambda: last_action in _on_screen(app), what="the last key after scrolling")

        # `q` in the help closes the help, it does not quit the console; `esc` closes it too.
        await pilot.press("q")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="q to close the help")
        assert app.is_running and HELP_TITLE not in _on_screen(app)
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen) and app.screen.is_mounted,
                       what="the help again")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="esc to close the help")
        await pilot.pause()
        assert HELP_TITLE not in _on_screen(app)
        assert app.screen is app.screen_stack[0] and app.is_running


LINES = 1200
NUMBERED = f"for i in range({LINES}):\n    print(f'line {{i:05d}}', flush=(i % 200 == 0))\n"


async def _job_on_screen(app, pilot, backend, code: str):
    job = run_python(backend, code)
    await wait_thread(wait_stage, backend, job.id, ("COMPLETED",))
    await wait_for(pilot, lambda: job.id in app.jobs_table.rows_by_id, what="the job row")
    app.jobs_table.select_job(job.id)
    await wait_for(
        pilot, lambda: app.log_pane.job_id == job.id and app.log_pane.ended, timeout=30, what="its log"
    )
    return job


async def test_ctrl_s_saves_the_whole_log_not_just_the_tail_on_screen(backend, cfg, tmp_path, monkeypatch):
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, log_max_lines=100, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        job = await _job_on_screen(app, pilot, backend, NUMBERED)
        assert len(app.log_pane.lines) == 100  # the pane keeps a tail only

        # esc on the prompt: nothing is saved.
        await pilot.press("ctrl+s")
        await mounted_screen(pilot, PromptScreen, "the save prompt")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, PromptScreen), what="the prompt to close")
        assert not [w for w in app.workers if w.group == "save"] and list(folder.iterdir()) == []

        # The prompt names the job and offers <job id>.log in the data dir (not the current
        # folder); enter saves there.
        await pilot.press("ctrl+s")
        await mounted_screen(pilot, PromptScreen, "the save prompt")
        assert f"Save the full log of {job.id} to:" in _on_screen(app)
        target = paths.data_dir() / "logs" / f"{job.id}.log"
        assert app.screen.query_one(Input).value == str(target)
        await pilot.press("enter")
        await wait_for(pilot, lambda: any(n.startswith("Saved") for n in notes(app)), what="the notification")
        assert list(folder.iterdir()) == []

        # Saving there again asks before overwriting: no leaves the file as it was, yes replaces it.
        target.write_text("kept\n", encoding="utf-8")
        for answer in ("n", "y"):
            await pilot.press("ctrl+s")
            await mounted_screen(pilot, PromptScreen, "the save prompt")
            await pilot.press("enter")
            await mounted_screen(pilot, ConfirmScreen, what="the overwrite question")
            assert str(app.screen.query_one("#confirm-title").render()) == f"Overwrite {target}?"
            await pilot.press(answer)
            if answer == "n":
                await wait_for(pilot, lambda: any("left as it was" in n for n in notes(app)))
                assert target.read_text(encoding="utf-8") == "kept\n"
        await wait_for(pilot, lambda: sum(n.startswith("Saved") for n in notes(app)) == 2, what="the second save")

    full = list(backend.api.fetch_job_logs(job_id=job.id, namespace=backend.namespace))
    saved = target.read_text(encoding="utf-8").splitlines()
    assert saved == full
    assert [line for line in saved if line.startswith("line ")] == [f"line {i:05d}" for i in range(LINES)]
    assert f"Saved {len(full)} lines to {target}" in notes(app)


async def test_ctrl_s_to_a_path_typed_with_tilde_and_to_a_missing_folder(backend, cfg, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    app = ConsoleApp(cfg, backend, refresh_seconds=0.3, stream_metrics=False)
    async with app.run_test(size=(80, 24)) as pilot:
        job = await _job_on_screen(app, pilot, backend, "print('only line')")

        async def save_to(path: str) -> None:
            await pilot.press("ctrl+s")
            await mounted_screen(pilot, PromptScreen, "the save prompt")
            app.screen.query_one(Input).value = path
            await pilot.press("enter")

        await save_to("~/saved.log")
        await wait_for(pilot, lambda: any(n.startswith("Saved") for n in notes(app)), what="the notification")
        assert "only line" in (tmp_path / "saved.log").read_text(encoding="utf-8").splitlines()

        await save_to(str(tmp_path / "no-such-folder" / f"{job.id}.log"))
        await wait_for(
            pilot,
            lambda: any(n.startswith("Saving the log failed") for n in notes(app)),
            what="the failure notification",
        )
        failure = next(n for n in notes(app) if n.startswith("Saving the log failed"))
        assert "No such file or directory" in failure
        assert not (tmp_path / "no-such-folder").exists()
