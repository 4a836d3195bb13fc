"""acpio: the Python toolkit for the Agent Client Protocol (ACP)."""

__version__ = "0.1.0"
