"""An ACP agent as a LangChain chat model (:class:`AcpChatModel`) and a LangGraph node (:func:`acp_node`)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, PrivateAttr

from acpio.frameworks.langgraph.agent_link import AgentLink, Conversation, TurnResult

__all__ = ["AcpChatModel", "AcpNode", "acp_node"]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


class AcpChatModel(BaseChatModel):
    """An ACP agent (Claude Code, Codex, Gemini, ``acpio agent``...) used as a LangChain chat model.

    ``AcpChatModel(command="acpio agent --offline")`` starts the agent at the first call and keeps
    it; each conversation gets a session of its own, and a call whose messages continue an earlier
    call's conversation (its messages and the answer) prompts the same session with only what is
    new: the agent keeps the conversation, its files and its tools. The agent's text is the
    model's answer, streamed as it comes (``astream``); ``response_metadata["stop_reason"]`` is
    the turn's stop reason. The agent's permission requests are answered by ``permissions``
    (``"allow"`` or ``"deny"``) and, with ``files``, its file
    reads and writes are served inside ``cwd``. Cancelling a call (``asyncio`` cancellation of
    ``ainvoke``) cancels the agent's turn. :meth:`close` ends the agent process.
    """

    #: The agent's command line (shell words, or a list).
    command: str | list[str]
    #: The sessions' working directory (default: the current directory).
    cwd: Path = Field(default_factory=Path.cwd)
    #: How the agent's permission requests are answered: ``"allow"`` (once) or ``"deny"``.
    permissions: Literal["allow", "deny"] = "deny"
    #: Whether to serve the agent's file reads and writes (inside :attr:`cwd` only).
    files: bool = True

    _link: AgentLink | None = PrivateAttr(default=None)

    @property
    def _llm_type(self) -> str:
        return "acp-agent"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"command": self.command, "cwd": str(self.cwd)}

    def _agent(self) -> AgentLink:
        if self._link is None:
            self._link = AgentLink(self.command, self.cwd.resolve(), self.permissions, self.files)
        return self._link

    def close(self) -> None:
        """End the agent process and forget the sessions (the next call starts the agent again)."""
        if self._link is not None:
            self._link.close()
            self._link = None

    def _turn(
        self, messages: Sequence[BaseMessage], out: Callable[[str], None]
    ) -> concurrent.futures.Future[tuple[TurnResult, Conversation]]:
        """Prompt the agent with what ``messages`` add to their conversation; the future of the turn.

        ``out`` gets each chunk of text (in the link's thread); cancelling the future cancels the
        agent's turn.
        """
        link = self._agent()
        history, new = link.find(_conversation(messages))
        text = _prompt_text(new)
        return link.submit(lambda: link.prompt(history, new, text, out))

    # --- async ------------------------------------------------------------------------------------

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        loop = asyncio.get_running_loop()
        chunks: asyncio.Queue[str | None] = asyncio.Queue()

        def out(text: str) -> None:
            loop.call_soon_threadsafe(chunks.put_nowait, text)

        future = self._turn(messages, out)
        future.add_done_callback(lambda _: loop.call_soon_threadsafe(chunks.put_nowait, None))
        try:
            while (text := await chunks.get()) is not None:
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                if run_manager is not None:
                    await run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
            result = (await asyncio.wrap_future(future))[0]
        finally:
            future.cancel()  # a no-op once done; else the agent's turn is cancelled
        yield _last_chunk(result)

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        future = self._turn(messages, lambda text: None)
        try:
            result = (await asyncio.wrap_future(future))[0]
        finally:
            future.cancel()
        return _result(result)

    # --- sync -------------------------------------------------------------------------------------

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        chunks: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        future = self._turn(messages, chunks.put)
        future.add_done_callback(lambda _: chunks.put(None))
        try:
            while (text := chunks.get()) is not None:
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                if run_manager is not None:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
            result = future.result()[0]
        finally:
            future.cancel()
        yield _last_chunk(result)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return _result(self._turn(messages, lambda text: None).result()[0])


def _conversation(messages: Sequence[BaseMessage]) -> Conversation:
    return tuple((message.type, message.text) for message in messages)


def _prompt_text(new: Conversation) -> str:
    """The prompt: the new messages' text; what others said (another node's answer, a tool) after its role."""
    return "\n\n".join(
        text if role in ("human", "system") else f"{_ROLES.get(role, role)}: {text}" for role, text in new
    )


def _last_chunk(result: TurnResult) -> ChatGenerationChunk:
    metadata = {"stop_reason": result.stop_reason}
    return ChatGenerationChunk(message=AIMessageChunk(content="", response_metadata=metadata))


def _result(result: TurnResult) -> ChatResult:
    message = AIMessage(content=result.text, response_metadata={"stop_reason": result.stop_reason})
    return ChatResult(generations=[ChatGeneration(message=message)])


class AcpNode:
    """A LangGraph node: the state's messages answered by an :class:`AcpChatModel` (see :func:`acp_node`)."""

    def __init__(self, model: AcpChatModel, key: str) -> None:
        self.model = model
        self.key = key
        self.__name__ = "acp_agent"  # the node's name when the graph is given none

    def __repr__(self) -> str:
        return f"<AcpNode {self.model.command!r}>"

    async def __call__(self, state: Any) -> dict[str, Any]:
        """The agent's answer to ``state[key]``, to be added to the messages."""
        return {self.key: [await self.model.ainvoke(state[self.key])]}


def acp_node(model: AcpChatModel, *, key: str = "messages") -> AcpNode:
    """A LangGraph node that answers the state's ``key`` messages with ``model`` (an ACP agent).

    ``builder.add_node("coder", acp_node(AcpChatModel(command="acpio agent --offline")))``: the
    node adds the agent's answer to the messages; each graph thread's conversation is one session
    of the agent. The state may be of any type (a ``MessagesState``, a ``TypedDict`` of one's own)
    whose ``state[key]`` holds the messages.
    """
    return AcpNode(model, key)
