"""Agent frameworks on ACP: serve a framework's agent as an ACP agent, or use an ACP agent inside one.

One subpackage per framework, each behind its extra (``pip install 'acpio[langgraph]'``); importing
``acpio.frameworks`` imports none of them.
"""
