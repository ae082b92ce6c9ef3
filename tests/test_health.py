"""``{base_url}mcp/health`` (issue 36, item 2b): a liveness answer anyone may ask for, details for a person.

Against a real server: without credentials exactly
``{"status": "ok"}``, while ``/mcp`` itself still answers 401; with the server's token the version, the MCP
sessions and the rooms open; with a grant's token (an agent, not a person) the minimal answer.
"""

from __future__ import annotations

from typing import Any

import httpx2

from jupyter_pair_mcp import __version__

from .conftest import TLS, call_tool, notebook_json, within


async def test_health_answers_anyone_minimally_and_a_person_in_detail(
    mcp_url: str, auth: dict[str, str], mcp_client: Any, jp_root_dir: Any
) -> None:
    (jp_root_dir / "nb.ipynb").write_text(notebook_json([{"cell_type": "code", "source": "x = 1"}]))
    async with httpx2.AsyncClient(timeout=30, verify=TLS) as http:
        anonymous = await within(http.get(f"{mcp_url}/health"))
        assert (anonymous.status_code, anonymous.json()) == (200, {"status": "ok"})
        assert anonymous.headers["Cache-Control"] == "no-store"
        assert (await within(http.post(mcp_url, json={}))).status_code == 401  # the endpoint is still closed
        async with mcp_client() as client:
            await call_tool(client, "get_notebook", path="nb.ipynb")
            person = (await within(http.get(f"{mcp_url}/health", headers=auth))).json()
            assert person.get("status") == "ok", person
            assert person["version"] == __version__
            assert person["sessions"] >= 1 and person["rooms"] >= 1
            minted = await within(
                http.post(mcp_url.removesuffix("mcp") + "api/mcp/grants", json={"level": "read"}, headers=auth)
            )
            bearer = {"Authorization": f"Bearer {minted.json()['token']}"}
            async with httpx2.AsyncClient(timeout=30, verify=TLS) as fresh:  # not the person's login cookie
                agent = await within(fresh.get(f"{mcp_url}/health", headers=bearer))
            assert (agent.status_code, agent.json()) == (200, {"status": "ok"})
