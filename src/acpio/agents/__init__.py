"""Ready-made agents built with acpio.

* :mod:`acpio.agents.testy`: ``acpio testy``, a deterministic agent driven by a small prompt
  language, for testing clients, proxies and conductors (see ``docs/testy.md``).
"""
