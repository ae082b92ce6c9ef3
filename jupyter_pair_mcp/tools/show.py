"""``show_in_jupyterlab``: open a document, and bring a cell into view, in the JupyterLab of the person the agent
works for — only when that person allowed this agent to (services/show.py says how the request travels).

Never a general "run a JupyterLab command": the tab opens the document and selects the cell, nothing else.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.rooms import awareness as aw
from jupyter_pair_mcp.errors import InvalidArgument, PermissionDenied, Unavailable
from jupyter_pair_mcp.models.awareness import OkResult
from jupyter_pair_mcp.services.actors import OWNER
from jupyter_pair_mcp.services.global_presence import GLOBAL_ROOM
from jupyter_pair_mcp.services.show import ShowRequests
from jupyter_pair_mcp.tools.params import DocumentPath
from jupyter_pair_mcp.tools.registry import READ, Backends, ToolSpec

#: Where the person turns it on, as the refusals say.
SETTING = "'May move my view' for it in JupyterLab's MCP panel (Connected agents)"


def show_tools(b: Backends) -> list[ToolSpec]:
    def service() -> ShowRequests:
        if not isinstance(b.show, ShowRequests):
            raise Unavailable("showing documents in JupyterLab is not available on this server")
        return b.show

    async def show_in_jupyterlab(
        ctx: Context,
        path: DocumentPath,
        cell_id: Annotated[str | None, Field(description="Cell to show.")] = None,
    ) -> OkResult:
        """Open a document, at a cell, in your person's JupyterLab if allowed."""
        show = service()
        actor = b.actors.of(ctx)
        grant = show.grant_of(actor.grant)
        if grant is None and actor.grant:  # a Jupyter AI chat's persona: its grant is the chat's, listed nowhere
            raise PermissionDenied(
                "this agent's grant is not one a person can allow to move their view (only grants listed in "
                "JupyterLab's MCP panel, Connected agents, can be); point_at shows a cell without moving anyone's view"
            )
        if grant is None:
            raise PermissionDenied(
                "only an agent connected with a grant may move a person's view, once they allow it: this one uses "
                f"a Jupyter credential. Connect with a grant (docs/authorization.md), then ask its person to turn on "
                f"{SETTING}; point_at shows a cell without moving anyone's view"
            )
        who = grant.person_name or OWNER
        if not getattr(grant, "may_move_view", False):
            raise PermissionDenied(
                f"{who} has not let this agent move their view: ask {who} to turn on {SETTING}; point_at shows a "
                "cell without moving anyone's view"
            )
        path, kind = await b.contents.require_document(path)
        if cell_id is not None:
            if kind != "notebook":
                raise InvalidArgument(f"{path!r} is a text file: leave cell_id out")
            view = await b.rooms.notebook(path, actor)
            view.resolve(cell_id=cell_id)  # an unknown cell is an error naming the notebook's cells
        if not show.has_tab(aw.room(b.rooms, GLOBAL_ROOM), grant.person):
            raise Unavailable(f"{who} has no JupyterLab open now: nothing was shown (point_at leaves a mark to find)")
        request = show.open(grant.person, path, cell_id, actor.name)
        if request is None:
            raise Unavailable("too many requests to show documents are waiting: retry in a few seconds")
        try:
            outcome = await show.wait(request)
        finally:
            show.close(request)
        if outcome == "unclaimed":
            raise Unavailable(
                f"no JupyterLab tab of {who} took the request (is jupyter-pair-mcp's extension installed there?): "
                "nothing was shown"
            )
        if outcome == "unanswered":
            raise Unavailable(f"a JupyterLab tab of {who} took the request but did not say it showed it: unknown")
        if outcome == "refused":
            raise Unavailable(f"{who}'s JupyterLab could not show it: {request.message or 'no reason given'}")
        where = f"; cell {cell_id!r} is selected and in view" if cell_id is not None else ""
        return OkResult(ok=True, detail=f"{path!r} is open in {who}'s JupyterLab{where}")

    return [ToolSpec(show_in_jupyterlab, "awareness", "Show a document in the person's JupyterLab", READ, False)]
