"""`Dialog`: a modal screen that is answered once.

A dialog is dismissed by a key (`y`, `n`, `esc`) or by its buttons; two of those close together
(`n` then enter on the focused button, typed faster than the screen closes) would dismiss it
twice: Textual's `Screen.dismiss` runs the result callback each time and pops whatever screen
is on top, so the action would run twice and the screen below (the versions view, the jobs
screen) would be closed too. A `Dialog` takes the first answer only, and only while it is the
screen on top; later ones do nothing.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from textual.await_complete import AwaitComplete
from textual.screen import ModalScreen

ResultT = TypeVar("ResultT")


class Dialog(ModalScreen[ResultT], Generic[ResultT]):
    _answered = False

    def dismiss(self, result: Any = None) -> AwaitComplete:
        if self._answered or not self.is_attached or self.app.screen is not self:
            return AwaitComplete()
        self._answered = True
        return super().dismiss(result)
