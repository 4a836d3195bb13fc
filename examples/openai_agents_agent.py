"""An OpenAI Agents SDK agent over ACP, its sessions in SQLite (docs/frameworks/openai-agents.md).
OPENAI_API_KEY=sk-... acpio prompt --agent "python examples/openai_agents_agent.py" "Note: buy milk"
"""

from pathlib import Path

from agents import Agent, function_tool

from acpio.frameworks.openai_agents import serve_openai_agent


@function_tool
def write_file(path: str, content: str) -> str:
    """Write a text file of the project (shown to the user as a diff)."""
    Path(path).write_text(content)
    return f"Wrote {path}"


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete a file of the project: the user is asked first."""
    Path(path).unlink()
    return f"Deleted {path}"


agent = Agent(name="notes", instructions="Keep the user's notes in files.", tools=[write_file, delete_file])

if __name__ == "__main__":
    serve_openai_agent(agent, store="sqlite:///sessions.db", protocols=(1, 2))  # v1 and v2 editors
