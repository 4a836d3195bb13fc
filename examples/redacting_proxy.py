"""A proxy that redacts API keys from the agent's text, even a key split across chunks.

An agent streams text in chunks cut anywhere: ``sk-`` | ``abc123`` | ``456789``. Rewriting each
chunk on its own lets that key through; ``transform_agent_text`` gives each session's stream a
lookahead transform instead, which holds back a tail that may still grow into a key and sends it
(redacted or not) once it knows, or before the turn ends.

Run it under a conductor, with the trace redacted too::

    acpio conductor --trace run.jsons --redact 'sk-[A-Za-z0-9]{8,}' \
        agent "python examples/redacting_proxy.py" "acpio testy"
"""

from __future__ import annotations

import asyncio

from acpio import Proxy, Redactor, Stdio, transform_agent_text

KEYS = Redactor([r"sk-[A-Za-z0-9]{8,}", r"ghp_[A-Za-z0-9]{20,}"], replacement="[key removed]")

app = Proxy.builder(name="redact-keys")
transform_agent_text(app, KEYS.stream)  # one stream per session and message

if __name__ == "__main__":
    asyncio.run(app.serve(Stdio()))
