"""A connection to an ACP agent that any caller can use, from any thread or event loop: :class:`AgentLink`.

A LangChain chat model is called from synchronous code, from one event loop or from several (each
test, each ``asyncio.run``). The agent's connection lives in an event loop of its own, on a thread
of its own, started at the first call; callers reach it with :meth:`AgentLink.submit`. One
session is opened per conversation: a conversation is known by its messages so far, so a call
whose messages continue an earlier call's (with that call's answer) prompts the same session
with what is new, and the agent keeps the context.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from acpio.client import PermissionChoice
from acpio.roles import Client
from acpio.schema import ClientCapabilities, FileSystemCapabilities, InitializeRequest
from acpio.session import ActiveSession, SessionConnection
from acpio.session.answers import TurnAnswers
from acpio.transports.subprocess import AcpAgent

__all__ = ["AgentLink", "Conversation", "TurnResult"]

_log = logging.getLogger("acpio.frameworks")

T = TypeVar("T")

#: A conversation as the link knows it: each message's role and text, in order.
Conversation = tuple[tuple[str, str], ...]


class TurnResult:
    """How one prompt ended: the agent's text and its stop reason."""

    def __init__(self, text: str, stop_reason: str) -> None:
        #: The text of the agent's message chunks, joined.
        self.text = text
        #: Why the turn stopped (``end_turn``, ``cancelled``...).
        self.stop_reason = stop_reason

    def __repr__(self) -> str:
        return f"<TurnResult {self.stop_reason} {self.text[:40]!r}>"


class AgentLink:
    """One agent process, its connection, and a session per conversation (see the module docstring)."""

    def __init__(
        self, command: str | Sequence[str], cwd: Path, permissions: PermissionChoice, files: bool
    ) -> None:
        self._command = command if isinstance(command, str) else list(command)
        self._cwd = cwd
        self._permissions = permissions
        self._files = files
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready: concurrent.futures.Future[SessionConnection] | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._sessions: dict[Conversation, ActiveSession] = {}

    def __repr__(self) -> str:
        return f"<AgentLink {self._command!r} sessions={len(self._sessions)}>"

    def submit(self, work: Callable[[], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        """Run ``await work()`` in the link's loop (the agent started first if need be); its future."""
        loop = self._start()
        return asyncio.run_coroutine_threadsafe(work(), loop)

    def call_soon(self, fn: Callable[[], object]) -> None:
        """Run ``fn()`` in the link's loop, soon (from any thread)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn)

    def _start(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                ready: concurrent.futures.Future[SessionConnection] = concurrent.futures.Future()
                self._ready = ready
                self._thread = threading.Thread(target=self._run, name="acpio agent link", daemon=True)
                self._loop = asyncio.new_event_loop()
                self._stop = asyncio.Event()  # bound to the link's loop at its first wait
                self._thread.start()
            return self._loop

    def _run(self) -> None:
        loop = self._loop
        assert loop is not None
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._serve())
        except Exception:  # the callers waiting on the agent get its failure; here it is only logged
            _log.debug("The connection to %r ended with an error", self._command, exc_info=True)
        finally:
            loop.close()

    async def _serve(self) -> None:
        assert self._ready is not None
        assert self._stop is not None
        stop = self._stop

        async def main(cx: SessionConnection) -> None:
            await cx.send_request(
                InitializeRequest(protocol_version=1, client_capabilities=self._advertised())
            )
            self._ready.set_result(cx)  # type: ignore[union-attr]
            await stop.wait()

        try:
            await Client.builder().connect_with(AcpAgent(self._command, cwd=self._cwd), main)
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def _advertised(self) -> ClientCapabilities:
        if not self._files:
            return ClientCapabilities()
        return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))

    async def prompt(
        self, history: Conversation, new: Conversation, text: str, out: Callable[[str], None]
    ) -> tuple[TurnResult, Conversation]:
        """Prompt the session of ``history`` (a new one when it has none) with ``text``.

        ``out`` gets each chunk of the agent's text as it comes. Returns how the turn ended and the
        conversation it makes (``history``, ``new`` and the agent's answer), by which the next call
        finds the session again. Cancelling this cancels the agent's turn.
        """
        assert self._ready is not None
        # shielded: a cancelled caller must not cancel the connection every caller waits for
        cx = await asyncio.shield(asyncio.wrap_future(self._ready))
        session = self._sessions.pop(history, None)
        if session is None:
            session = await cx.build_session(self._cwd).start_session()
        answers = TurnAnswers(cx, self._permissions, self._cwd if self._files else None)
        parts: list[str] = []
        session.send_prompt(text)
        try:
            async for message in session:
                if message.is_request:
                    await answers.answer(message)
                elif (chunk := message.text) is not None:
                    parts.append(chunk)
                    out(chunk)
        except asyncio.CancelledError:
            session.cancel()
            raise
        result = TurnResult("".join(parts), str(session.stop_reason))
        conversation = (*history, *new, ("ai", result.text))
        self._sessions[conversation] = session
        return result, conversation

    def find(self, conversation: Conversation) -> tuple[Conversation, Conversation]:
        """``conversation`` cut after the longest earlier conversation with a session: (it, the rest)."""
        for end in range(len(conversation), 0, -1):
            if conversation[:end] in self._sessions:
                return conversation[:end], conversation[end:]
        return (), conversation

    def close(self) -> None:
        """End the connection and the agent process (it is started again by the next call)."""
        with self._lock:
            loop, thread, stop = self._loop, self._thread, self._stop
            self._loop = self._thread = self._stop = self._ready = None
            self._sessions = {}
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=10)
