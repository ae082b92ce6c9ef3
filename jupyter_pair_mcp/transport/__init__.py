"""The HTTP wire into Jupyter: the authenticated handler, its ASGI bridge, request bodies, rate
limits, and the guard that lets the process exit. Nothing here knows MCP tools.
"""
