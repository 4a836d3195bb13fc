"""An ACP agent that breaks one rule of the protocol, named by its first argument (standard library only).

It answers ``initialize`` (advertising ``loadSession``), ``session/new`` (session ``s-1``),
``session/load`` and ``session/prompt`` (``end_turn``) and does what the rule's name says:

``noise``                writes a line that is not JSON on stdout before answering ``initialize``
``long-line``            sends a 5000-character message chunk during the prompt
``fs``                   asks ``fs/read_text_file`` during the prompt, whatever the client advertised
``update-before-new``    sends an update for ``s-1`` before answering ``session/new``
``update-after-load``    answers ``session/load`` first, then replays a message of the conversation
``unknown-session``      sends an update for session ``s-999`` during the prompt
``response-to-nothing``  answers request id 777, which nobody sent, during the prompt
``schema``               sends a ``tool_call`` update without its ``toolCallId`` and ``title``
"""

import json
import sys

RULE = sys.argv[1]


def send(message):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def update(session, body):
    send({"method": "session/update", "params": {"sessionId": session, "update": body}})


def chunk(text):
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def during_prompt():
    if RULE == "long-line":
        update("s-1", chunk("x" * 5000))
    elif RULE == "fs":
        send(
            {
                "id": "read-1",
                "method": "fs/read_text_file",
                "params": {"sessionId": "s-1", "path": "/etc/hostname"},
            }
        )
    elif RULE == "unknown-session":
        update("s-999", chunk("hello"))
    elif RULE == "response-to-nothing":
        send({"id": 777, "result": {}})
    elif RULE == "schema":
        update("s-1", {"sessionUpdate": "tool_call", "status": "pending"})
    update("s-1", chunk("done"))


for line in sys.stdin:
    message = json.loads(line)
    method, id = message.get("method"), message.get("id")
    if method == "initialize":
        if RULE == "noise":
            print("Starting my agent, please wait...", flush=True)
        send({"id": id, "result": {"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}})
    elif method == "session/new":
        if RULE == "update-before-new":
            update("s-1", {"sessionUpdate": "available_commands_update", "availableCommands": []})
        send({"id": id, "result": {"sessionId": "s-1"}})
    elif method == "session/load":
        session = message["params"]["sessionId"]
        if RULE != "update-after-load":
            update(
                session, {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}
            )
        send({"id": id, "result": {}})
        if RULE == "update-after-load":
            update(
                session, {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}
            )
    elif method == "session/prompt":
        during_prompt()
        send({"id": id, "result": {"stopReason": "end_turn"}})
