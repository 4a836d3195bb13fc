"""An agent that breaks rules the conformance check must catch (run by ``test_agents.py``).

It prints a banner on stdout, echoes any protocol version, answers everything with a result (a
notification too, a cancelled turn ``end_turn``), reads a file through a client that offered no
file system, and sends an update after each answer.
"""

from __future__ import annotations

import json
import sys


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    print("broken agent 1.0 starting")
    for line in sys.stdin:
        message = json.loads(line)
        method, params = message.get("method"), message.get("params") or {}
        if "method" not in message:
            continue  # the client's answer to our fs/read_text_file
        if "id" not in message:
            send({"jsonrpc": "2.0", "id": None, "result": {}})  # an answer to a notification
            continue
        result: object = {}
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion"),
                "agentInfo": {"name": "broken", "version": "1"},
            }
        elif method == "session/new" and "cwd" in params:
            result = {"sessionId": "broken-1"}
        elif method == "session/prompt":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": "read",
                    "method": "fs/read_text_file",
                    "params": {"sessionId": "broken-1", "path": "/etc/hostname"},
                }
            )
            result = {"stopReason": "end_turn"}
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "late"}}
        send(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "broken-1", "update": chunk},
            }
        )


if __name__ == "__main__":
    main()
