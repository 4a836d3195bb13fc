r"""Making the agent's text safe to print on a terminal: :func:`sanitize`.

Everything an agent sends is text it chose: its messages and thoughts, tool call titles, plan
entries, diffs, file paths, the output of the commands it ran, error messages, permission option
names, session titles. Printed as it is, that text could drive the person's terminal: change the
window title (OSC 0), write the clipboard (OSC 52), clear the screen (CSI 2J), move the cursor, or
return to the start of the line (``\r``) and overwrite it, say with a fake ``[permission]`` line.

:func:`sanitize` removes all of that and keeps the text:

* escape sequences are removed whole: CSI (``ESC [`` ... final byte, which includes colours and
  cursor moves), OSC, DCS, SOS, PM and APC strings (up to their BEL or ST terminator), their 8-bit
  forms, and the other two- and three-character ``ESC`` sequences; a lone ``ESC`` goes too;
* a ``\r\n`` line ending becomes ``\n``; every other control character (C0 but tab and newline,
  DEL, C1) is removed, ``\r`` and backspace included;
* the Unicode bidirectional embedding, override and isolate characters (U+202A..U+202E,
  U+2066..U+2069), which can make text display in another order than it reads, are removed;
* with ``single_line=True`` (titles, names, one-line notes) a newline becomes a space, so that the
  text cannot start a line of its own.

The renderers of ``acpio prompt`` apply it to every piece of text before it is printed (their
own colours are added afterwards, by rich, from style names); the ``--ask`` questions and the
notes on stderr go through it too. ``--json`` output needs none: JSON escapes control characters.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["sanitize"]

_SEQUENCES: Final = re.compile(
    r"""
      \x1b\[ [0-?]* [ -/]* [@-~]                      # CSI ... final byte (SGR, cursor moves, erase)
    | \x9b [0-?]* [ -/]* [@-~]                        # the same, 8-bit
    | \x1b[\]PX^_] .*? (?: \x07 | \x1b\\ | \x9c )     # OSC, DCS, SOS, PM, APC ... BEL or ST
    | [\x90\x98\x9d\x9e\x9f] .*? (?: \x07 | \x1b\\ | \x9c )  # the same, 8-bit
    | \x1b [ -/]* [0-~]                               # other escape sequences (ESC 7, ESC c, ESC ( B)
    """,
    re.VERBOSE | re.DOTALL,
)
#: What is left to remove: control characters but tab and newline, and the bidi controls.
_CONTROLS: Final = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def sanitize(text: str, *, single_line: bool = False) -> str:
    r"""``text`` without anything a terminal would act on instead of showing; see the module docstring.

    Tabs and newlines are kept (``\r\n`` becomes ``\n``); with ``single_line`` a newline becomes a
    space. Text without control characters comes back unchanged (the same object).
    """
    if text.isprintable():
        return text  # the common case: no control, bidi or newline character at all
    text = _SEQUENCES.sub("", text.replace("\r\n", "\n"))
    text = _CONTROLS.sub("", text)
    return text.replace("\n", " ") if single_line else text
