"""The footer: the keys that work where the focus is, fitted to the terminal's width.

Textual's footer lays every key out in a row and lets the right end fall off the screen (at 80
columns the schedule keys never showed, and a key half under the palette's entry left a stray
letter). This one shows the keys in the key table's footer order (`keys.FOOTER`), as many as fit
whole (`keys.footer_fit`), the command palette's entry only when it fits beside all of them, and
lays them out again when the terminal is resized.

It draws its keys in the first frame (Textual's footer waits for the screen's next change of
bindings, which can come a while later) and lays them out again only when what it shows changes:
a change of focus between widgets with the same keys, or the first focus, mounts nothing.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from console.ui import keys


class KeyFooter(Footer):
    """Textual's `Footer`, fitted to its width (see the module docstring)."""

    _layout_due = False
    _shown: tuple[Any, ...] | None = None

    def _keys(self) -> list[tuple[Any, ...]]:
        """`FooterKey`'s arguments for each key that fits, then the palette's (with its classes)."""
        active = self.screen.active_bindings
        shown: list[tuple[Any, bool, str]] = []
        actions: set[str] = set()
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in actions:  # one entry per action
                actions.add(binding.action)
                shown.append((binding, enabled, tooltip))
        entries = [(b.id or "", self.app.get_key_display(b), b.description) for b, _e, _t in shown]
        width = self.size.width or self.app.size.width
        fits, palette = keys.footer_fit(entries, width)
        out = []
        for i in fits:
            binding, enabled, tooltip = shown[i]
            out.append((binding.key, entries[i][1], binding.description, binding.action, not enabled, tooltip, ""))
        if palette and self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _node, binding, enabled, tooltip = found
                out.append((binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                            not enabled, binding.tooltip or binding.description, "-command-palette"))
        return out

    def compose(self) -> ComposeResult:
        made = self._keys()
        self._shown = tuple(made)
        compact = "-compact" if self.compact else ""
        for key, display, description, action, disabled, tooltip, classes in made:
            entry = FooterKey(key, display, description, action, disabled=disabled, tooltip=tooltip,
                              classes=f"{classes} {compact}")
            entry.set_reactive(FooterKey.compact, self.compact)  # born with its class: no restyle on mount
            yield entry

    def on_mount(self) -> None:
        # the screen tells its bindings as it resumes and takes its first focus, before this footer
        # listens: the keys of that focus are laid out after the first frame if they differ
        self.bindings_changed(self.screen)

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._lay_out()

    def on_resize(self, event: Resize) -> None:
        if event.size.width != getattr(self, "_laid_out_for", None):
            self._laid_out_for = event.size.width
            self._lay_out()

    def _lay_out(self) -> None:
        """Lay the keys out after the next refresh, once for however many asked before it."""
        if not self._layout_due:
            self._layout_due = True
            self.call_after_refresh(self._recompose)

    async def _recompose(self) -> None:
        self._layout_due = False
        if self.is_attached and tuple(self._keys()) != self._shown:
            await self.recompose()
