"""The conductor: runs a chain of ACP proxies (and an agent) behind one ACP endpoint.

::

    from acpio.conductor import Chain

    conductor = Chain.agent("conductor", ["python examples/arrow_proxy.py", "python my_agent.py"])
    await conductor.trace_to("trace.jsons").serve(Stdio())

* :class:`Chain`: the conductor itself (:mod:`acpio.conductor.chain`); ``acpio conductor`` serves one
  over stdio.
* :class:`Named`, ``ComponentSpec``, ``Instantiator``, :class:`Instantiation`: what a component is,
  and how components (and the ``initialize`` they get) are chosen from the first ``initialize``
  (:mod:`acpio.conductor.components`).
* :class:`TraceWriter` and the sinks :class:`FileSink`, :class:`MemorySink`, :class:`CallbackSink`:
  the trace of the logical message sequence (:mod:`acpio.conductor.tracing`); :class:`DebugLog`: the
  line log of each component (:mod:`acpio.conductor.debuglog`); :class:`RedactingSink`: a trace
  with no copy of a secret (:mod:`acpio.conductor.redacting`).
* :class:`ConductorError`: what stops a conductor (:mod:`acpio.conductor.errors`); the connections to
  the components, their start and their end, are in :mod:`acpio.conductor.links`; notifications
  passed on as bytes, in :mod:`acpio.conductor.relay`.
"""

from acpio.conductor.chain import Chain, Mode
from acpio.conductor.components import ComponentSpec, Instantiation, Instantiator, Named
from acpio.conductor.debuglog import DebugLog
from acpio.conductor.errors import ConductorError
from acpio.conductor.redacting import RedactingSink
from acpio.conductor.tracing import CallbackSink, ChainTrace, FileSink, MemorySink, TraceSink, TraceWriter

__all__ = [
    "CallbackSink",
    "Chain",
    "ChainTrace",
    "ComponentSpec",
    "ConductorError",
    "DebugLog",
    "FileSink",
    "Instantiation",
    "Instantiator",
    "MemorySink",
    "Mode",
    "Named",
    "RedactingSink",
    "TraceSink",
    "TraceWriter",
]
