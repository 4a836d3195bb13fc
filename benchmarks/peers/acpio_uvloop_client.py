"""The acpio benchmark client (``acpio_client.py``) on uvloop's event loop, as ``acpio[fast]`` runs it."""

from acpio_client import run_client

if __name__ == "__main__":
    run_client("uvloop")
