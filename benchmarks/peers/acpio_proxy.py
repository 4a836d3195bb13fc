"""The benchmark proxy on acpio: no handler of its own, so every message passes through unchanged.

Run by a conductor (``acpio conductor agent "python benchmarks/peers/acpio_proxy.py" ...``) in
``benchmarks/scale.py``'s chain scenario: what one hop costs, raw JSON forwarded without validation.
"""

from __future__ import annotations

import asyncio

from acpio import Proxy
from acpio.transports import Stdio

if __name__ == "__main__":
    asyncio.run(Proxy.builder(name="bench-proxy").serve(Stdio()))
