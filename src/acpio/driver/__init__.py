"""The high-level client behind :mod:`acpio.client`'s :class:`~acpio.client.AgentClient`: import from there.

Driving an agent needs the session layer, the transports and ``acpio prompt``'s terminals, so it
sits above them, while :mod:`acpio.client` (permission policies, confined files) sits below the
sessions that use it; :mod:`acpio.client` exports these names lazily. The modules:

* :mod:`~acpio.driver.client`: :class:`AgentClient` (connect, open sessions, close it all) and
  :class:`AgentSession` (prompt, stream, cancel);
* :mod:`~acpio.driver.turn`: :class:`TurnStream`, one turn read as it comes;
* :mod:`~acpio.driver.requests`: how the agent's requests are answered and recorded;
* :mod:`~acpio.driver.result`: :class:`TurnResult` and its parts, the stream's own events;
* :mod:`~acpio.driver.usage`: :class:`Usage`, read from the standard places and private dialects.
"""
