"""testy: the deterministic test agent behind ``acpio testy``.

Send it a prompt that is a small script (``echo hello``, ``read notes.txt``, ``permission``,
``sleep 5``...) and it does exactly that on the wire; any other prompt is echoed back. The language
is documented in ``docs/testy.md`` and by ``acpio testy --help``.

::

    from acpio.agents.testy import TestyOptions, testy_agent

    await testy_agent(TestyOptions(auth=True)).serve(transport)

Modules: :mod:`~acpio.agents.testy.script` (the language, pure),
:mod:`~acpio.agents.testy.sessions` (sessions, kept in a session store), :mod:`~acpio.agents.testy.turn`
(a prompt turn and its cancellation), :mod:`~acpio.agents.testy.commands` (one function per
command) and :mod:`~acpio.agents.testy.agent` (the builder and its handlers). The names below load
the protocol models on first use only, so importing the script module stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.agents.testy.agent import TestyOptions, testy_agent

__all__ = ["TestyOptions", "testy_agent"]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
