"""The footer: the keys that work where the focus is, fitted to the terminal's width.

Textual's footer lays every key out in a row and lets the right end fall off the screen (at 80
columns the schedule keys never showed, and a key half under the palette's entry left a stray
letter). This one shows the keys in the key table's footer order (`keys.FOOTER`), as many as fit
whole (`keys.footer_fit`), the command palette's entry only when it fits beside all of them, and
lays them out again when the terminal is resized.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.events import Resize
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from console.ui import keys


class KeyFooter(Footer):
    """Textual's `Footer`, fitted to its width (see the module docstring)."""

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        active = self.screen.active_bindings
        shown: list[tuple[object, bool, str]] = []
        actions: set[str] = set()
        for _node, binding, enabled, tooltip in active.values():
            if binding.show and binding.action not in actions:  # one entry per action
                actions.add(binding.action)
                shown.append((binding, enabled, tooltip))
        entries = [(b.id or "", self.app.get_key_display(b), b.description) for b, _e, _t in shown]
        width = self.size.width or self.app.size.width
        fits, palette = keys.footer_fit(entries, width)
        for i in fits:
            binding, enabled, tooltip = shown[i]
            yield FooterKey(
                binding.key, entries[i][1], binding.description, binding.action,
                disabled=not enabled, tooltip=tooltip,
            ).data_bind(compact=Footer.compact)
        if palette and self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            try:
                _node, binding, enabled, tooltip = active[self.app.COMMAND_PALETTE_BINDING]
            except KeyError:
                return
            yield FooterKey(
                binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                classes="-command-palette", disabled=not enabled, tooltip=binding.tooltip or binding.description,
            )

    def on_resize(self, event: Resize) -> None:
        if event.size.width != getattr(self, "_laid_out_for", None):
            self._laid_out_for = event.size.width
            self.call_after_refresh(self.recompose)
