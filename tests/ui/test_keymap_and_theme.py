"""The user's keys and looks: `[keys]` remaps the app's bindings (footer, `?`, ctrl+p follow) and
`theme` picks a Textual theme, in the real app on the embedded server; a bad entry is refused in
one line that names the key."""

from __future__ import annotations

import pytest
from tests.ui.conftest import mounted_screen, screen_rows, wait_for
from tests.ui.test_help_and_save_log import _painted, _table_rows
from textual.widgets import Static

from console import config
from console.config import ConfigError
from console.ui import keys
from console.ui.app import ConsoleApp
from console.ui.screens.help import HelpScreen
from console.ui.widgets.jobs_pane import JobsPane


def _app(cfg, backend) -> ConsoleApp:
    return ConsoleApp(cfg, backend, refresh_seconds=3600, stream_metrics=False, watch_seconds=None)


async def test_user_keys_replace_the_defaults_everywhere_and_help_shows_them(backend, cfg, tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(
        'theme = "nord"\n[keys]\nquit = "Q"\nhelp = ["f1", "?"]\nfilter = "ctrl+f"\nfollow = "F"\n',
        encoding="utf-8",
    )
    loaded = config.load(path)
    cfg.keys, cfg.theme, cfg.path = loaded.keys, loaded.theme, path
    app = _app(cfg, backend)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for(pilot, lambda: app.refresher.refresh_count > 0, what="the first refresh")
        assert app.theme == "nord"
        # with these keys `q` does not quit and `/` does not filter; ctrl+f does
        await pilot.press("q")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+f")
        pane = app.query_one(JobsPane)
        await wait_for(pilot, lambda: pane.query_one("#jobs-filter").display, what="the filter box")
        await pilot.press("escape")
        app.jobs_table.focus()
        await pilot.pause()
        footer = screen_rows(app)[-1]
        assert "Q Quit" in footer, footer
        assert "f1" in footer.lower(), footer

        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Filter (ctrl+f)" in titles and "Help (f1, ?)" in titles  # the command palette too

        # the help screen lists the keys in effect, opened by the new key
        await pilot.press("f1")
        await mounted_screen(pilot, HelpScreen, what="the help screen")
        rows = _table_rows(_painted(app.screen.query(Static).last()))
        assert rows == keys.key_table(app.user_keys)
        by_action = {what: key for key, what, _where in rows}
        assert by_action["Quit the console"] == "Q"
        assert by_action["All keys"] == "f1, ?"
        assert by_action["Follow the log on/off"] == "F"  # the app's key and the log pane's
        assert by_action["Follow the end of the log on/off"] == "F"
        assert by_action["Submit a training job (form)"] == "s"  # untouched
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, HelpScreen), what="the help closed")

        await pilot.press("Q")
        await wait_for(pilot, lambda: not app.is_running, what="Q to quit")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[keys]\nlaunch = "l"\n', "key 'keys.launch': no such action (ids: tab-fleet,"),
        ('[keys]\nquit = "s"\n', "key 'keys.quit': 's' is already Submit (everywhere, keys.submit)"),
        ('[keys]\nsubmit = "ctrl+s"\n', "key 'keys.submit': 'ctrl+s' is already Save log"),
        ('[keys]\nhelp = "ctrl+shift+fo_o"\n', "key 'keys.help': 'ctrl+shift+fo_o' is not a key"),
        ('[keys]\nquit = "tab"\n', "key 'keys.quit': 'tab' is Textual's own key"),
        ('[keys]\nhelp = "ctrl+q"\n', "key 'keys.help': 'ctrl+q' is Textual's own key"),
        ('[keys]\nquit = 3\n', "key 'keys.quit': expected a key or a list of keys"),
        ('theme = "hotdog-stand"\n', "key 'theme': expected one of"),
    ],
)
def test_a_bad_key_or_theme_is_one_line_naming_the_key(backend, cfg, tmp_path, toml, message):
    path = tmp_path / "config.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        loaded = config.load(path)
        _app(loaded, backend)
    text = str(err.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_keys_and_theme_survive_a_save(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('theme = "gruvbox"\n[keys]\nhelp = ["f1", "?"]\n', encoding="utf-8")
    cfg = config.load(path)
    config.save(cfg)
    again = config.load(path)
    assert again.theme == "gruvbox" and again.keys == {"help": "f1,?"}
    assert '"f1"' in path.read_text(encoding="utf-8")  # the list form is kept as written


def test_every_binding_is_in_the_key_table_with_an_id():
    from pathlib import Path

    import console.ui

    assert all(b.id for bindings, _where in keys.SECTIONS for b in bindings)
    ui = Path(console.ui.__file__).parent
    elsewhere = [p.relative_to(ui) for p in ui.rglob("*.py") if p.name != "keys.py" and "Binding(" in p.read_text()]
    assert elsewhere == []  # a binding outside keys.py could not be remapped, nor shown by `?`


def test_config_set_checks_a_key_and_a_theme_as_the_app_does(capsys, monkeypatch, tmp_path):
    from console import cli

    path = tmp_path / "config.toml"
    monkeypatch.setenv("CONSOLE_CONFIG", str(path))
    assert cli.main(["config", "set", "keys.quit", "Q"]) == 0
    assert cli.main(["config", "set", "keys.help", '["f1", "?"]']) == 0
    assert cli.main(["config", "set", "theme", "dracula"]) == 0
    capsys.readouterr()
    for argv, said in [
        (["config", "set", "keys.launch", "l"], "key 'keys.launch': no such action"),
        (["config", "set", "keys.submit", "Q"], "key 'keys.submit': 'Q' is already Quit"),
        (["config", "set", "theme", "hotdog-stand"], "key 'theme': expected one of"),
    ]:
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert said in err and err.count("\n") == 1, err
    cfg = config.load(path)
    assert cfg.keys == {"quit": "Q", "help": "f1,?"} and cfg.theme == "dracula"  # nothing bad was saved
    assert cli.main(["config", "unset", "keys.quit"]) == 0
    assert config.load(path).keys == {"help": "f1,?"}
