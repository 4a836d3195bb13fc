"""Local servers that speak the model providers' real HTTP APIs, scripted per test (see ``_http``)."""
