"""Prompts: ready-made instructions people pick in their MCP client to set an agent to work on a notebook.

Each prompt is a user message naming the real tools and parameters of this server, written for the way
documents work here: read live with ``get_notebook``, address cells by id, base every edit on the
``revision`` that was read (a person may be typing in the same cell), run cells in the shared kernel.
The text adapts to the tools the admin enabled: a read-only server, or one without the ``execution``
group, gets prompts that never name a tool it does not list.

What a prompt embeds: ``review_notebook`` and ``fix_failing_cell`` without a cell embed no notebook
content, only instructions, because a notebook can be megabytes, a prompt lands whole in the agent's
context, and ``get_notebook`` pages through it with the revisions edits need. ``explain_cell_output``
and ``fix_failing_cell`` with a ``cell_id`` embed that one cell as it is live now (source, its
``revision``, outputs rendered as text) within :data:`EMBED_LIMIT` characters, saying so and how to
read the rest when it was cut: the cell is the whole subject, reading it costs the same whatever the
notebook's size, and the agent can act at once.

``prompts/get`` asks Jupyter's authorizer for read on ``contents`` (like resource reads), and answers an
unknown prompt, a missing or unknown argument and any problem with the notebook or cell with a JSON-RPC
``-32602`` (invalid params) error whose message says what to fix.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, GetPromptRequestParams
from pydantic import Field

from jupyter_pair_mcp.errors import PairMCPError
from jupyter_pair_mcp.render import CUT_MARKER, ReadBudget, cut, render_outputs
from jupyter_pair_mcp.tools.registry import READ, Backends, authorize_request
from jupyter_pair_mcp.tools.views import Reads

#: Characters of one cell (source plus rendered outputs) a prompt embeds at most.
EMBED_LIMIT = 12_000

NotebookArg = Annotated[str, Field(description="Notebook path, relative to the Jupyter root.")]
CellArg = Annotated[str, Field(description="The cell's id (get_notebook lists cell ids).")]
FailingCellArg = Annotated[
    str | None, Field(description="The failing cell's id; default: the first cell with an error output.")
]

UPDATE = "batch_update_notebook_cells"
INSERT = "batch_insert_notebook_cells"
EXECUTE = "execute_notebook_cell"


def _q(value: str) -> str:
    """A string as a JSON literal, the way tool arguments are written in the prompts."""
    return json.dumps(value, ensure_ascii=False)


def _fenced(text: str, info: str = "") -> list[str]:
    """``text`` in a Markdown code fence longer than any backtick run inside it (so it cannot close early)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + info, text, fence]


class _Cell:
    """One cell embedded in a prompt: its text block, its revision, and whether it has an error output."""

    def __init__(self, text: str, revision: str, failed: bool) -> None:
        self.text = text
        self.revision = revision
        self.failed = failed


async def _embedded_cell(b: Backends, ctx: Context, path: str, cell_id: str) -> _Cell:
    """The live cell as a bounded text block (source, then outputs as text) and the revision served."""
    view = await b.rooms.notebook(path)
    cell = view.cell(view.resolve(cell_id=cell_id))
    budget = EMBED_LIMIT
    source_cut = len(cell.source) > budget // 2
    source = cut(cell.source, budget // 2) if source_cut else cell.source
    budget -= len(source)
    revision = Reads(b, ctx, path).served(cell.source, cell.id, cut=source_cut)
    count = cell.execution_count if cell.execution_count is not None else " "
    lines = [
        f"Cell {_q(cell.id)} (index {cell.index}, {cell.cell_type}, execution_count [{count}], "
        f"revision {_q(revision)}), as it is live now:",
        *_fenced(source),
    ]
    shown, left_out = 0, 0
    spend = ReadBudget()  # the rendering work of this prompt, shared by its outputs
    for output in cell.outputs:
        if budget <= 0:
            left_out += 1
            continue
        [rendered] = render_outputs([output], min(b.max_output_length, budget), spend)
        lines += [f"Output {shown + 1} ({rendered['output_type']}):", *_fenced(rendered["text"], "text")]
        budget -= len(rendered["text"])
        shown += 1
    if not cell.outputs:
        lines.append("It has no outputs.")
    if source_cut or left_out or any(CUT_MARKER.search(line) for line in lines):
        lines.append(
            f"This is cut to fit the prompt ({left_out} more outputs left out): "
            f"get_notebook(path={_q(path)}, cell_ids=[{_q(cell.id)}]) returns all of it."
        )
    failed = any(o.get("output_type") == "error" for o in cell.outputs)
    return _Cell("\n".join(lines), revision, failed)


def _collaboration_note() -> str:
    return (
        "People may have this notebook open in JupyterLab and be editing it while you work: address cells by "
        "their id, never by index alone, and base each change on the revision you read."
    )


def _review(path: str, tools: set[str]) -> str:
    p = _q(path)
    steps = [
        f"Review the notebook {p} on this Jupyter server.",
        "",
        f"1. Read it live with get_notebook(path={p}). If the result says truncated, read on with "
        f"get_notebook(path={p}, start_index=<next_index>) until you have seen every cell.",
        '2. Check every cell and its outputs: outputs with output_type "error" (name the exception and its '
        "cause); code cells never run (execution_count null) or run out of order; outputs that no longer match "
        "their source; warnings; unclear or missing explanations in markdown cells; hard-coded paths, "
        "credentials or magic numbers; code that would fail on a fresh kernel.",
        "3. Report your findings, most important first, each tied to the cell id it concerns.",
    ]
    if UPDATE in tools:
        steps.append(
            "4. Suggest edits as changes addressed by cell id, each with the revision get_notebook returned for "
            "that cell, ready to apply as "
            f'{UPDATE}(path={p}, updates=[{{"cell_id": "<id>", "content": "<whole new source>", '
            '"base_revision": "<revision>"}], exec=false)'
            + (
                f' and new cells as {INSERT}(path={p}, cells=[{{"content": "<source>", '
                f'"cell_type": "markdown"}}], after_cell_id="<id>", exec=false)'
                if INSERT in tools
                else ""
            )
            + ". Do not apply them until the user agrees."
        )
    else:
        steps.append(
            "4. Suggest edits as changes addressed by cell id, each with the whole new source (this server is "
            "read-only for you: the user applies them)."
        )
    return "\n".join([*steps, "", _collaboration_note()])


def _fix(path: str, cell_id: str | None, embedded: _Cell | None, tools: set[str]) -> str:
    p = _q(path)
    lines = [f"Fix the failing cell of the notebook {p} on this Jupyter server."]
    if embedded is not None:
        assert cell_id is not None
        c = _q(cell_id)
        lines += ["", embedded.text, ""]
        if not embedded.failed:
            lines.append(
                "This cell shows no error output now."
                + (
                    f" Run it with {EXECUTE}(path={p}, cell_id={c}) to see whether it fails."
                    if EXECUTE in tools
                    else " Ask the user how it fails, or look for the problem in its source."
                )
            )
        lines.append(f"1. Find the cause of the error in cell {c}: read its source and the traceback above.")
        revision = _q(embedded.revision)
    else:
        c = '"<id>"'
        lines += [
            "",
            f"1. Find the first cell with an error: read the notebook with get_notebook(path={p}) (if the result "
            f"says truncated, read on with get_notebook(path={p}, start_index=<next_index>)) and take the first "
            'cell with an output whose output_type is "error". If no cell has one, say so and stop. Read the '
            "traceback, and the cells before it that define what it uses, to find the cause.",
        ]
        revision = '"<revision of that cell from get_notebook>"'
    if UPDATE in tools:
        lines.append(
            "2. Fix it by editing that cell relative to the source you read: "
            f'{UPDATE}(path={p}, updates=[{{"cell_id": {c}, "content": "<whole fixed source>", '
            f'"base_revision": {revision}}}], exec=false). Change only what the fix needs; if the edit is refused '
            "because the cell changed under you, read the cell again and redo the fix on its current source. "
            "If the cause is in an earlier cell, fix that cell the same way (with its own revision)."
        )
    else:
        lines.append("2. Write the fixed source of that cell for the user (this server is read-only for you).")
    if EXECUTE in tools and UPDATE in tools:
        lines.append(
            f"3. Re-run it with {EXECUTE}(path={p}, cell_id={c}) (after any earlier cell you changed) and check "
            'the result: status "ok" and the outputs you expect. If it still fails, repeat from step 1, at most '
            "three times, then explain what is left."
        )
    else:
        lines.append("3. Execution is not available to you on this server: ask the user to re-run the cell.")
    return "\n".join([*lines, "", _collaboration_note()])


def _explain(path: str, embedded: _Cell, tools: set[str]) -> str:
    p = _q(path)
    return "\n".join(
        [
            f"Explain the output of a cell of the notebook {p} on this Jupyter server.",
            "",
            embedded.text,
            "",
            "Explain what the output shows and what in the source produced it, in plain words for the person "
            "who runs this notebook: for a table or number, what it means; for an error, what went wrong and how "
            "to fix it; for a warning, whether it matters. If you need what earlier cells defined, read them with "
            f"get_notebook(path={p}, end_index=<this cell's index>). Do not change the notebook.",
        ]
    )


def register_prompts(server: MCPServer, b: Backends) -> None:
    """Serve the prompts, and ``prompts/get`` with authorization and clear argument errors."""

    async def tools() -> set[str]:
        return {tool.name for tool in await server.list_tools()}  # built once by the server, then cached

    async def review_notebook(ctx: Context, path: NotebookArg) -> str:
        path = await _checked(b.contents.require(path, "notebook"))
        return _review(path, await tools())

    async def fix_failing_cell(ctx: Context, path: NotebookArg, cell_id: FailingCellArg = None) -> str:
        path = await _checked(b.contents.require(path, "notebook"))
        embedded = await _checked(_embedded_cell(b, ctx, path, cell_id)) if cell_id else None
        return _fix(path, cell_id or None, embedded, await tools())

    async def explain_cell_output(ctx: Context, path: NotebookArg, cell_id: CellArg) -> str:
        path = await _checked(b.contents.require(path, "notebook"))
        return _explain(path, await _checked(_embedded_cell(b, ctx, path, cell_id)), await tools())

    specs: list[tuple[Callable[..., Awaitable[str]], str, str]] = [
        (
            review_notebook,
            "Review a notebook",
            "Read a notebook live, check its outputs and errors, and suggest edits addressed by cell id.",
        ),
        (
            fix_failing_cell,
            "Fix a failing cell",
            "Find the first error (or the given cell), fix that cell from the source read, and re-run it.",
        ),
        (
            explain_cell_output,
            "Explain a cell's output",
            "Explain what a cell's output shows; the cell's live source and outputs are included.",
        ),
    ]
    prompts: dict[str, Prompt] = {}
    for fn, title, description in specs:
        prompt = Prompt.from_function(fn, title=title, description=description)
        server.add_prompt(prompt)
        prompts[prompt.name] = prompt
    _guard_get(server, prompts)


async def _checked(awaitable: Awaitable[Any]) -> Any:
    """Await, turning our errors into the JSON-RPC error clients show (rendering would hide the message)."""
    try:
        return await awaitable
    except PairMCPError as exc:
        raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None


def _guard_get(server: MCPServer, prompts: dict[str, Prompt]) -> None:
    """Check a ``prompts/get`` before the SDK renders it: the prompt exists, the caller may read, the arguments fit.

    The SDK answers an unknown prompt or a missing argument with a generic error (code 0 or internal error),
    and would ignore an unknown argument; here each is a ``-32602`` naming the fix.
    """
    lowlevel = server._lowlevel_server  # MCPServer exposes no public accessor for its low-level server
    entry = lowlevel.get_request_handler("prompts/get")
    assert entry is not None, "MCPServer serves prompts/get"
    render = entry.handler

    async def get_prompt(ctx: Any, params: GetPromptRequestParams) -> Any:
        prompt = prompts.get(params.name)
        if prompt is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"unknown prompt {params.name!r}: the prompts are {', '.join(prompts)} (prompts/list)",
            )
        try:
            await authorize_request(ctx.request, *READ)
        except PairMCPError as exc:
            raise MCPError(code=INVALID_PARAMS, message=str(exc)) from None
        declared = {arg.name: arg for arg in prompt.arguments or []}
        # Optional arguments left empty (clients' forms send "") are absent; unknown ones are errors either way.
        given = {k: v for k, v in (params.arguments or {}).items() if v != "" or k not in declared}
        for name in given:
            if name not in declared:
                match = difflib.get_close_matches(name, list(declared), n=1, cutoff=0.5)
                hint = f" (did you mean {match[0]!r}?)" if match else ""
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"unknown argument {name!r} of prompt {prompt.name!r}{hint}: its arguments are "
                    f"{', '.join(declared)}",
                )
        for arg in declared.values():
            if arg.required and not given.get(arg.name):
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"prompt {prompt.name!r} needs the argument {arg.name!r}: {arg.description}",
                )
        return await render(ctx, params.model_copy(update={"arguments": given}))

    lowlevel.add_request_handler("prompts/get", GetPromptRequestParams, get_prompt)
