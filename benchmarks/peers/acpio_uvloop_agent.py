"""The acpio benchmark agent (``acpio_agent.py``) on uvloop's event loop, as ``acpio[fast]`` runs it."""

from acpio_agent import run_agent

if __name__ == "__main__":
    run_agent("uvloop")
