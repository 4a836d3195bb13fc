"""testy's terminal login: the interactive process a client runs for the ``testy-terminal-login`` method.

``acpio testy --terminal-auth FILE`` advertises a terminal auth method whose ``args`` are
``--login`` and whose ``env`` sets ``ACPIO_TESTY_LOGIN=1``. A client that supports terminal
authentication runs testy's own command line with both added, in the user's terminal:
:func:`terminal_login` then asks for a name, writes it to FILE and exits 0 (an empty answer, or
an environment without the variable, exits non-zero). The agent process reads FILE
(:func:`logged_in`) before it sets a session up; ``logout`` removes it.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Final, TextIO

import orjson

from acpio.errors import InvalidParams

__all__ = ["AUTH_METHOD_ID", "check_login_method", "forget_terminal_login", "logged_in", "terminal_login"]

#: The one auth method testy offers when started with ``auth`` (v1 ``authenticate``, v2 ``auth/login``).
AUTH_METHOD_ID: Final = "testy-login"
#: The variable the terminal auth method sets; the login refuses to run without it.
LOGIN_VARIABLE = "ACPIO_TESTY_LOGIN"


def check_login_method(method_id: str, *, offered: bool) -> None:
    """Refuse a login with ``method_id`` unless it is testy's method and testy offers it (``-32602``)."""
    if not offered or method_id != AUTH_METHOD_ID:
        what = f"its one method is {AUTH_METHOD_ID!r}" if offered else "it offers none"
        raise InvalidParams(
            {"methodId": method_id},
            message=f"Unknown auth method {method_id!r}: {what} (see authMethods in the initialize answer)",
        )


def forget_terminal_login(path: str | Path | None) -> None:
    """Log out of the terminal login: remove its file (nothing to do without one)."""
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def logged_in(path: str | Path) -> str | None:
    """The name of whoever logged in, as the login file says; ``None`` when no one is logged in."""
    try:
        data = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    user = data.get("user") if isinstance(data, dict) else None
    return user if isinstance(user, str) and user else None


def terminal_login(path: str | Path, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Ask for a name on the terminal and write it to ``path``; the exit status (0: logged in)."""
    read = stdin if stdin is not None else sys.stdin
    write = stdout if stdout is not None else sys.stdout
    if os.environ.get(LOGIN_VARIABLE) != "1":
        write.write(
            f"testy login: {LOGIN_VARIABLE}=1 is not set: the client did not apply the auth method's env\n"
        )
        write.flush()
        return 2
    write.write("testy login: your name (an empty line fails the login): ")
    write.flush()
    name = read.readline().strip()
    if not name:
        write.write("testy login: no name given; not logged in\n")
        write.flush()
        return 1
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(orjson.dumps({"user": name}))
    write.write(f"testy login: logged in as {name}\n")
    write.flush()
    return 0
