"""The parts of Textual, huggingface_hub and trackio the console uses that are not their public API,
one test each: when an upgrade renames or reshapes one, the test that names it fails, instead of
the console failing in front of a user. `pyproject.toml` pins each of these dependencies to the
range these tests ran on; a new release is let in only once they pass on it.

What each is for (and why no public API does it):

- `App._display` (ConsoleApp): everything Textual writes for one screen update goes through it,
  so the driver can tell a frame from other output and drop frames a slow terminal cannot take.
- `LinuxDriver._file` / `Driver._app` (ConsoleDriver): where the frames go, and whose screen is
  redrawn after frames were dropped.
- `App._driver` (the on-call watch): a bell or desktop-notification escape written to the terminal
  (Textual has `bell()` and `copy_to_clipboard()`, nothing for OSC 9 / 777).
- `Screen._compositor.render_update` (the kept last frame): the composed screen as ANSI text.
- `textual.widgets._footer.FooterKey` and `Footer._bindings_ready` (the footer fitted to the
  width): Textual's own key widget, laid out by the console's order.
- `textual.timer.Timer.__init__` (`console.ui.timers.guard`): the one place every timer is made,
  so a negative, zero or non-finite delay (a toast built after its time was up) is armed as a
  short finite one instead of spinning `Timer._run` for good.
- `Screen.dismiss` (`console.ui.screens.dialog.Dialog`): runs the result callback and pops the top
  screen each time it is called; a dialog answers once.
- `ScreenResume.refresh_styles`, read by `Screen._on_screen_resume` (`console.ui.app.MainScreen`):
  the main screen's first resume, as the app starts, does not style every widget a second time.
- `huggingface_hub.utils._http.hf_request_event_hook`: the request hook huggingface_hub's own
  client has, kept on the console's client with its resilient transport.
- trackio's `sqlite_storage.TRACKIO_DIR` / `utils.TRACKIO_DIR`: where trackio reads, pointed at
  the embedded server's store for one read at a time.
- `textual.keys._character_to_key` (the `[keys]` config): a typed character as Textual names it.
- textual-serve's `Server._make_app` (`console web`): the aiohttp app the token check is added to.
- uvicorn's `Server.main_loop` / `on_tick` / `should_exit` and `Server.shutdown`, its
  `server_state.connections` and each connection's `cycle.scope` and `transport` (the embedded
  server's `_Server`): a stop that begins at once instead of at the loop's next 0.1 s tick, and a
  shutdown that closes the log followers' streams instead of waiting them out.
"""

from __future__ import annotations

import inspect


def test_textual_writes_a_screen_update_through_app_display():
    from textual.app import App

    from console.ui.app import ConsoleApp

    assert list(inspect.signature(App._display).parameters) == ["self", "screen", "renderable"]
    assert "self._driver" in inspect.getsource(App._display)  # what it writes goes to the driver
    assert "_display" in vars(ConsoleApp)


def test_the_linux_driver_keeps_its_file_and_app():
    from textual.driver import Driver
    from textual.drivers.linux_driver import LinuxDriver

    from console.ui.driver import ConsoleDriver

    assert "self._file" in inspect.getsource(LinuxDriver.__init__)
    assert "self._app = app" in inspect.getsource(Driver.__init__)
    for name in ("write", "start_application_mode", "close"):
        assert callable(getattr(LinuxDriver, name)) and name in vars(ConsoleDriver)


def test_the_app_keeps_its_driver_as_app_driver():
    from textual.app import App

    assert "self._driver: Driver | None = None" in inspect.getsource(App.__init__)


def test_a_screen_composes_through_its_compositor():
    from textual._compositor import Compositor
    from textual.screen import Screen

    assert "self._compositor" in inspect.getsource(Screen.__init__)
    assert "full" in inspect.signature(Compositor.render_update).parameters


def test_the_footer_key_widget_and_its_readiness_flag():
    from textual.widgets import Footer
    from textual.widgets._footer import FooterKey

    params = list(inspect.signature(FooterKey.__init__).parameters)
    assert params[:5] == ["self", "key", "key_display", "description", "action"]
    assert {"disabled", "tooltip", "classes"} <= set(params)
    assert "_bindings_ready" in inspect.getsource(Footer)


def test_huggingface_hub_has_its_request_hook_and_a_public_client_factory():
    from huggingface_hub.utils import _http, set_client_factory

    assert callable(_http.hf_request_event_hook) and callable(set_client_factory)
    assert list(inspect.signature(_http.hf_request_event_hook).parameters) == ["request"]


def test_trackio_reads_from_its_module_level_folder():
    import trackio.sqlite_storage as storage
    import trackio.utils as tutils

    assert hasattr(storage, "TRACKIO_DIR") and hasattr(tutils, "TRACKIO_DIR")
    assert "TRACKIO_DIR" in inspect.getsource(storage.SQLiteStorage.get_project_db_path)
    assert callable(storage.SQLiteStorage.get_logs)


def test_uvicorn_ticks_its_main_loop_and_keeps_its_connections_and_their_cycles():
    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol
    from uvicorn.server import Server, ServerState

    from console.server.serve import _Server

    loop = inspect.getsource(Server.main_loop)
    assert "await self.on_tick(counter)" in loop and "asyncio.sleep(0.1)" in loop  # what _Server repeats
    assert list(inspect.signature(Server.on_tick).parameters) == ["self", "counter"]
    assert "self.should_exit" in inspect.getsource(Server.on_tick)
    assert list(inspect.signature(Server.shutdown).parameters) == ["self", "sockets"]
    assert "self.server_state" in inspect.getsource(Server.__init__)
    assert "self.connections" in inspect.getsource(ServerState.__init__)
    init = inspect.getsource(H11Protocol.__init__)
    assert "self.transport" in init and "self.cycle" in init
    assert "scope" in inspect.signature(uvicorn.protocols.http.h11_impl.RequestResponseCycle.__init__).parameters
    assert {"main_loop", "shutdown"} <= set(vars(_Server))


def test_textual_turns_a_typed_character_into_its_key_name():
    """`textual.keys._character_to_key` (the `[keys]` config): "+" as Textual names it in a binding,
    so a user's key and Textual's own binding strings compare alike."""
    from textual.keys import _character_to_key

    from console.ui.keys import _normalize

    assert _character_to_key("+") == "plus" and _character_to_key("a") == "a"
    assert _normalize("+, ctrl+s") == ["plus", "ctrl+s"]


def test_textual_serve_builds_its_aiohttp_app_in_make_app():
    """textual-serve's `Server._make_app` (`console web`): the token check is added to the aiohttp
    app it builds; the routes `handle_index` serves are its own."""
    import inspect

    from textual_serve.server import Server

    assert inspect.iscoroutinefunction(Server._make_app)
    assert list(inspect.signature(Server._make_app).parameters) == ["self"]
    source = inspect.getsource(Server._make_app)
    assert "web.Application" in source and "handle_index" in source


def test_every_timer_is_made_by_timer_init_with_its_interval_second():
    from textual.message_pump import MessagePump
    from textual.timer import Timer

    from console.ui import timers

    timers.guard()
    params = list(inspect.signature(Timer.__init__).parameters)
    assert params[:3] == ["self", "event_target", "interval"]
    assert "_interval = self._interval" in inspect.getsource(Timer._run)  # what the loop divides by
    for name in ("set_timer", "set_interval"):
        assert "Timer(" in inspect.getsource(getattr(MessagePump, name))
    target = MessagePump()
    assert timers.guarded() and Timer(target, -1.0)._interval == timers.MIN_DELAY


def test_a_screen_dismiss_pops_the_top_screen():
    from textual.screen import Screen

    source = inspect.getsource(Screen.dismiss)
    assert "self.app.pop_screen()" in source and "callback(result)" in source


def test_a_resuming_screen_restyles_only_when_its_event_says_so():
    from textual import events
    from textual.screen import Screen

    assert events.ScreenResume().refresh_styles is True
    source = inspect.getsource(Screen._on_screen_resume)
    assert "if event.refresh_styles:" in source and "self.update_node_styles(" in source
