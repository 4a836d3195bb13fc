"""A test agent that writes on its stderr: a line when it starts, then acpio testy on stdin/stdout.

With a first argument, it sleeps that many seconds first (ignoring SIGTERM meanwhile) and writes
its pid to the file named by the second: a component slow to start.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from acpio.cli import main

if len(sys.argv) > 2:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open(sys.argv[2], "w") as file:
        file.write(str(os.getpid()))
    time.sleep(float(sys.argv[1]))
print("noisy agent starting", file=sys.stderr, flush=True)
sys.exit(main(["testy"]))
