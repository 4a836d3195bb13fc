"""acpio's test suite, a package: its folders (tests.agents...) never shadow installed packages.

The OpenAI Agents SDK is the package ``agents``, as the reference agent's tests were named.
"""
