"""Group ``execution``: a notebook kernel's variables, and scratch code run in it without adding a cell.

All three need execute permission on kernels, like running a cell: reading a variable runs code in the
kernel (its repr), and scratch code can do anything a cell can. Nothing here writes to the notebook.
"""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.errors import NotFound
from jupyter_pair_mcp.models.results import RenderedOutput
from jupyter_pair_mcp.models.variables import ScratchResult, Variable, VariableDetail, VariableList
from jupyter_pair_mcp.render import output_images, render_outputs
from jupyter_pair_mcp.services.inspection import KernelInspector
from jupyter_pair_mcp.tools.execution import EXECUTE, check_timeout, with_images
from jupyter_pair_mcp.tools.params import NotebookPath
from jupyter_pair_mcp.tools.registry import Backends, ToolSpec

# list_variables returns at most this many variables, each value cut at LIST_CHARS (~50 KB at most).
LIST_LIMIT = 200
LIST_CHARS = 200

VariableName = Annotated[str, Field(description="Name (list_variables).")]
Code = Annotated[str, Field(description="Code to run.")]
ScratchTimeout = Annotated[float, Field(description="Seconds, then interrupt (max 3600).")]


def variable_tools(b: Backends) -> list[ToolSpec]:
    inspector = KernelInspector(b.kernels)

    async def running_kernel(path: str) -> str:
        kernel = await b.kernels.kernel_for(path)
        if kernel is None:
            raise NotFound(
                f"no kernel is running for {path!r}, so it has no variables: run a cell (or execute_code) to start one"
            )
        return kernel.id

    async def list_variables(ctx: Context, path: NotebookPath) -> VariableList:
        """Kernel variables: type, short value, size/shape."""
        path = await b.contents.require(path, "notebook")
        found = await inspector.variables(await running_kernel(path), limit=LIST_LIMIT, chars=LIST_CHARS)
        return VariableList(
            path=path,
            variables=[Variable(**v) for v in found.variables],
            total=found.total,
            truncated=found.total > len(found.variables),
            via=found.via,  # type: ignore[arg-type]
        )

    async def get_variable(ctx: Context, path: NotebookPath, name: VariableName) -> VariableDetail:
        """One kernel variable: type, value, size, shape, dtype."""
        path = await b.contents.require(path, "notebook")
        info, via = await inspector.variable(await running_kernel(path), name, chars=b.max_output_length)
        return VariableDetail(path=path, via=via, **info)  # type: ignore[arg-type]

    async def execute_code(ctx: Context, path: NotebookPath, code: Code, timeout: ScratchTimeout = 30) -> ScratchResult:
        """Run code in the notebook's kernel, in no cell; outputs only to you."""
        check_timeout(timeout)
        path = await b.contents.require(path, "notebook")
        actor = b.actors.of(ctx)
        kernel = await b.execution.kernel(path)
        # The cap on a caller's executions in flight covers scratch runs too (they queue in the same kernel).
        with b.execution.claim(getattr(actor, "principal", "")):
            # Stoppable as a cell run is: a person's stop or a revoked grant ends it (and its MCP task) at once.
            scratch = await b.execution.stoppable(actor, path, inspector.run(kernel.id, code, timeout))
        status = scratch.execution.status
        if b.presence is not None:
            b.presence.record(actor, "execution", path, f"ran scratch code ({len(code)} characters): {status}")
        rendered = render_outputs(scratch.outputs, b.max_output_length)
        images = output_images(scratch.outputs) if b.execution.include_images else []
        result = ScratchResult(status=status, outputs=[RenderedOutput(**o) for o in rendered])  # type: ignore[arg-type]
        # Scratch outputs belong to no cell: the image report names none ("").
        return with_images(result, [("", mime, data) for mime, data in images], b.image_limits)  # type: ignore[return-value]

    return [
        ToolSpec(list_variables, "execution", "List kernel variables", EXECUTE, read_only=True),
        ToolSpec(get_variable, "execution", "Show a kernel variable", EXECUTE, read_only=True),
        ToolSpec(execute_code, "execution", "Run scratch code", EXECUTE, read_only=False, idempotent=False),
    ]
