"""Drive an agent: one prompt, its permissions and files answered inside a directory, the result shown.

Run it: ``python examples/drive_agent.py`` (it drives ``acpio testy``; pass another agent's
command as the argument). It prints the agent's text, each tool call and the stop reason.
"""

import asyncio
import shlex
import sys
import tempfile

from acpio import AgentClient

AGENT = sys.argv[1] if len(sys.argv) > 1 else shlex.join([sys.executable, "-m", "acpio", "testy"])
PROMPT = "write notes.txt Buy milk\npermission Publish the notes\necho Done."


async def main() -> None:
    with tempfile.TemporaryDirectory() as root:
        async with AgentClient(AGENT, cwd=root, permissions="allow") as client:
            session = await client.new_session()
            result = await session.prompt(PROMPT)
    print(result.text, end="")
    for call in result.tool_calls:
        print(f"tool call: {call.title} ({call.kind}, {call.status})")
    print("stop reason:", result.stop_reason)


asyncio.run(main())
