"""Pydantic models of what tools return (structured content and output schemas) and of their nested
inputs."""
