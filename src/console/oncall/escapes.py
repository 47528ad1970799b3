"""Terminal escapes for on-call: the bell, desktop notifications (OSC 9, OSC 777) and the
clipboard (OSC 52).

Each function returns the text to write; nothing here writes to a terminal, so the app can send
it through its own driver and `console watch` to its stderr. Every piece of job text put in an
escape is stripped of control characters first: a job's message must not end the escape early
and smuggle its own sequence in. Inside tmux an escape reaches the outer terminal only wrapped in
tmux's passthrough (and with `allow-passthrough on`): :func:`for_terminal` wraps it when `$TMUX`
is set.

Standard library only: no Textual, no console.ui, console.server or console.backend.
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Mapping

BEL = "\a"
DESKTOP_STYLES = ("off", "osc9", "osc777")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
OSC52_MAX_BYTES = 74_994
"""What xterm accepts in one OSC 52 (100,000 bytes of base64); longer text is not copied."""


def plain(text: object, limit: int = 200) -> str:
    """Job text safe inside an escape: control characters become spaces, at most `limit` long."""
    s = " ".join(_CONTROL.sub(" ", "" if text is None else str(text)).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


def osc9(message: str) -> str:
    """A desktop notification (iTerm2, WezTerm, kitty, Windows Terminal, foot)."""
    text = plain(message)
    if re.match(r"\d+;", text):  # "9;4;..." is ConEmu's progress bar, not a notification
        text = " " + text
    return f"\x1b]9;{text}{BEL}"


def osc777(title: str, body: str) -> str:
    """A desktop notification with a title (VTE terminals: GNOME Terminal, Tilix; also WezTerm)."""
    return f"\x1b]777;notify;{plain(title, 80).replace(';', ',')};{plain(body)}{BEL}"


def osc52(text: str) -> str | None:
    """Put `text` on the system clipboard through the terminal; None when it is too long."""
    data = text.encode("utf-8")
    if len(data) > OSC52_MAX_BYTES:
        return None
    return f"\x1b]52;c;{base64.b64encode(data).decode('ascii')}{BEL}"


def for_terminal(sequence: str, env: Mapping[str, str] | None = None) -> str:
    """The escape as it must be written: wrapped in tmux's passthrough when inside tmux."""
    env = os.environ if env is None else env
    if not sequence or sequence == BEL or not env.get("TMUX"):
        return sequence
    return "\x1bPtmux;" + sequence.replace("\x1b", "\x1b\x1b") + "\x1b\\"


def notification(title: str, body: str, *, bell: bool, desktop: str,
                 env: Mapping[str, str] | None = None) -> str:
    """What to write to the terminal for one notification ("" when every channel is off)."""
    out = BEL if bell else ""
    if desktop == "osc9":
        out += for_terminal(osc9(f"{title}: {body}"), env)
    elif desktop == "osc777":
        out += for_terminal(osc777(title, body), env)
    return out
