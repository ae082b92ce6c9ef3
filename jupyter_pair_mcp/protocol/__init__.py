"""The MCP server: the endpoint built per server, its low-level server (instructions, prompts,
resources and subscriptions), sessions and the resumable event store. It wires tools to services and
adapters; nothing below imports it.
"""
