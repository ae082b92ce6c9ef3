"""A Jupyter AI persona whose agent is tests/fake_acp_agent.py (the test copies this file to the server root's
``.jupyter/personas/``, where Jupyter AI loads local personas)."""

from __future__ import annotations

import os
import sys

import jupyter_ai_acp_client
from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
from jupyter_ai_persona_manager import PersonaDefaults

AGENT = os.environ["FAKE_ACP_AGENT"]


class FakeAcpPersona(BaseAcpPersona):
    def __init__(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(*args, executable=[sys.executable, AGENT], **kwargs)

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name="Fakebot",
            description="A fake ACP agent for tests.",
            avatar_path=os.path.join(os.path.dirname(jupyter_ai_acp_client.__file__), "static", "goose.svg"),
            system_prompt="unused",
        )
