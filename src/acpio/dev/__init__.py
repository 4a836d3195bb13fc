"""``acpio dev``: an agent restarted when its files change, its client's sessions kept.

:class:`DevRelay` stands between a client (an editor, ``acpio prompt -i``) and the agent process:
it passes every frame through, and when :class:`FileWatcher` sees a file change it starts a new
process, replays the client's ``initialize`` to it and reopens the client's sessions there
(``session/resume``, else ``session/load`` with its replay kept from the client, else a new session
under the old id). See ``docs/development.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.dev.relay import DevRelay
    from acpio.dev.watch import FileWatcher

__all__ = ["DevRelay", "FileWatcher"]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
