"""What a conductor runs: its components, their names, and how they are chosen.

A *component* is anything a connection can be opened to (a :class:`~acpio.transports.Component`):

* an in-process builder (``Proxy.builder()``, ``Agent.builder()``) or another conductor
  (:class:`~acpio.conductor.Chain`), connected through an in-process channel;
* a program to start as a child process: an :class:`~acpio.transports.AcpAgent`, an
  :class:`~acpio.transports.AgentCommand`, a shell-words string (``"python proxy.py --flag"``, leading
  ``NAME=value`` words set variables) or JSON config string, or an argv list;
* an agent served over the network: a ``ws://``, ``wss://``, ``http://`` or ``https://`` URL string
  (an :class:`acpio.remote.RemoteAgent`; needs the ``remote`` extra);
* any object with ``async open() -> Transport``.

Each has a name, shown in traces and error messages: the command string as given, the builder's or
conductor's ``name``, or the one set with :class:`Named`.

The component list is either given up front or chosen by an *instantiator* when the client's first
``initialize`` arrives: a function (plain or async) that receives the
:class:`~acpio.schema.InitializeRequest` and returns the list, or an :class:`Instantiation` (the list
and the ``initialize`` to send the chain instead of the client's).

When the conductor traces or writes a debug log, a component started from a command (a string, an
argv list, an :class:`~acpio.transports.AgentCommand`) has its stderr lines reported to it, for the
trace and the log; an :class:`~acpio.transports.AcpAgent` built by the caller keeps its own
``stderr`` callback, and its stderr stays its own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from acpio.schema import InitializeRequest
    from acpio.transports.base import Component, Transport
    from acpio.transports.commands import AgentCommand

__all__ = ["ComponentSpec", "Instantiation", "Instantiator", "LineRelay", "Member", "Named", "resolve"]

#: A component as a conductor accepts it (see the module docstring): a :class:`Component` (a builder, a
#: ``Chain``, an ``AcpAgent``, a ``RemoteAgent``, any object with ``async open() -> Transport``), a
#: transport used as it is, a command (an ``AgentCommand``, a string, an argv list or tuple), or one
#: of these :class:`Named`.
ComponentSpec: TypeAlias = (
    "Component | Transport | AgentCommand | str | list[str] | tuple[str, ...] | Named | Member"
)


@dataclass(frozen=True, slots=True)
class Instantiation:
    """What an instantiator may return: the components, and the ``initialize`` to send them.

    The ``initialize`` is sent down the chain in place of the client's.

    ``Instantiation([proxy, agent], initialize.model_copy(update={...}))``: the first component gets
    ``initialize`` (as ``proxy/initialize`` when it is a proxy) with these params; the client still
    gets the answer of the chain. ``initialize=None`` forwards the client's request unchanged.
    """

    #: The components, as a fixed list would give them.
    components: Sequence[ComponentSpec]
    #: The request sent down the chain, or ``None`` for the client's own.
    initialize: InitializeRequest | None = None


#: Chooses the components from the client's first ``initialize`` request (plain or async): a list of
#: components, or an :class:`Instantiation` that also changes the ``initialize`` sent down the chain.
Instantiator: TypeAlias = Callable[
    ["InitializeRequest"],
    "Sequence[ComponentSpec] | Instantiation | Awaitable[Sequence[ComponentSpec] | Instantiation]",
]


class LineRelay:
    """Passes the stderr lines a component process writes on to whoever the conductor's run names.

    The ``stderr`` callback of the :class:`~acpio.transports.AcpAgent` that :func:`resolve` makes for
    a command: each run sets :attr:`target` to its own function of the line.
    """

    __slots__ = ("target",)

    def __init__(self) -> None:
        #: Called with each stderr line, or ``None`` to drop them.
        self.target: Callable[[str], None] | None = None

    def __call__(self, line: str) -> None:
        """The ``stderr`` callback: hands the line to :attr:`target`."""
        target = self.target
        if target is not None:
            target(line)


@dataclass(frozen=True, slots=True)
class Named:
    """A component with the name a conductor shows for it in traces and errors.

    ``Named("arrow", AcpAgent(["python", "arrow_proxy.py"]))``; without it, a command is named by its
    command string and a builder by its ``name``.
    """

    #: The name shown for the component.
    name: str
    #: The component itself (any form listed in the module docstring).
    component: ComponentSpec


@dataclass(frozen=True, slots=True)
class Member:
    """One resolved component of a chain: its name and the object opened to connect to it."""

    #: The name shown in traces and errors.
    name: str
    #: Something with ``async open() -> Transport`` (or a transport, used as it is).
    component: Component | Transport
    #: Where the stderr lines of a process the conductor started from a command go, if it did.
    lines: LineRelay | None = field(default=None, compare=False)


def resolve(spec: ComponentSpec, *, stderr: bool = False) -> Member:
    """The :class:`Member` for ``spec``; a command becomes an :class:`~acpio.transports.AcpAgent`.

    ``stderr=True``: the process started for a command relays its stderr lines (:attr:`Member.lines`),
    for a run that traces or logs them; otherwise nothing watches its lines (nor pays for splitting
    them). Raises ``ValueError`` for a command that cannot be parsed (the
    message says why) and ``TypeError`` for an object that is no component.
    """
    from acpio.transports.base import Transport
    from acpio.transports.commands import AgentCommand
    from acpio.transports.subprocess import AcpAgent

    if isinstance(spec, Member):
        return spec
    if isinstance(spec, Named):
        inner = resolve(spec.component, stderr=stderr)
        return Member(spec.name, inner.component, inner.lines)
    if isinstance(spec, str):
        if spec.strip().split("://", 1)[0].lower() in {"http", "https", "ws", "wss"}:
            from acpio.remote import RemoteAgent  # an agent served over the network

            return Member(spec.strip(), RemoteAgent(spec.strip()))
        return _process(spec.strip(), AgentCommand.from_string(spec), stderr)
    if isinstance(spec, AgentCommand):
        return _process(spec.display(), spec, stderr)
    if isinstance(spec, AcpAgent):
        return Member(spec.command.display(), spec)
    if isinstance(spec, list | tuple) and all(isinstance(word, str) for word in spec):
        command = AgentCommand.parse(list(spec))
        return _process(command.display(), command, stderr)
    if not isinstance(spec, list | tuple) and (
        callable(getattr(spec, "open", None)) or isinstance(spec, Transport)
    ):
        name = getattr(spec, "name", None)
        return Member(name if isinstance(name, str) and name else type(spec).__name__, spec)
    raise TypeError(
        f"{spec!r} is not a conductor component: give a builder (Proxy.builder(), Agent.builder()), "
        "a Chain, an AcpAgent, a command string such as 'python proxy.py', an argv list, or an object "
        "with 'async open() -> Transport'"
    )


def _process(name: str, command: AgentCommand, stderr: bool) -> Member:
    """The member for a program the conductor starts (its stderr lines relayed to each run, if asked)."""
    from acpio.transports.subprocess import AcpAgent

    if not stderr:
        return Member(name, AcpAgent(command))
    relay = LineRelay()
    return Member(name, AcpAgent(command, stderr=relay), relay)
