"""Group ``execution``: which kernels exist and run, and which one a notebook uses.

A notebook's kernel choice lives in two places, and JupyterLab's kernel picker changes both: the notebook's
``metadata.kernelspec`` (in the live room, so open pages and the saved file agree) and the kernel of the
notebook's Jupyter session (which the next run uses).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from mcp.server.mcpserver import Context
from pydantic import Field

from jupyter_pair_mcp.adapters.kernels.adapter import KernelSpec
from jupyter_pair_mcp.adapters.rooms import NotebookView
from jupyter_pair_mcp.models.kernels import (
    KernelSpecInfo,
    KernelSpecList,
    NotebookKernel,
    RunningKernelInfo,
    RunningKernelList,
)
from jupyter_pair_mcp.models.results import KernelInfo
from jupyter_pair_mcp.tools.execution import EXECUTE
from jupyter_pair_mcp.tools.params import NotebookPath
from jupyter_pair_mcp.tools.registry import WRITE, Backends, ToolSpec, authorize, in_folders

# Lists stay within a few KB however many kernelspecs are installed or kernels run.
MAX_LISTED = 200

KernelName = Annotated[str, Field(description="Kernelspec (list_kernelspecs).")]


def spec_info(spec: KernelSpec) -> KernelSpecInfo:
    return KernelSpecInfo(name=spec.name, display_name=spec.display_name, language=spec.language)


def write_kernelspec(view: NotebookView, spec: KernelSpec) -> None:
    """Set the live notebook's ``kernelspec``, and ``language_info`` when the language changes, in one edit.

    ``language_info`` of the same language is left as the kernel wrote it (version, mimetype); another language
    gets just its name until its kernel reports the rest.
    """
    wanted = spec.metadata()
    view.set_metadata(
        {"kernelspec": wanted["kernelspec"]},
        f"set the kernel to {spec.name}",
        unless_same={"language_info": ("name", wanted["language_info"])},
    )


def kernel_tools(b: Backends) -> list[ToolSpec]:
    async def list_kernelspecs(ctx: Context) -> KernelSpecList:
        """Installed kernels (kernelspecs) and the server's default."""
        specs = await b.kernels.kernelspecs()
        return KernelSpecList(
            kernelspecs=[spec_info(spec) for spec in specs[:MAX_LISTED]],
            default=b.kernels.default_kernel_name,
            truncated=len(specs) > MAX_LISTED,
        )

    async def list_kernels(ctx: Context) -> RunningKernelList:
        """Running kernels and the notebooks using them."""
        await authorize(ctx, "read", "sessions")
        kernels = await b.kernels.running()
        scope = in_folders(ctx.request_context.request)
        if scope is not None:  # a grant limited to folders: only kernels of notebooks in them, by those names
            kernels = [replace(k, paths=tuple(p for p in k.paths if scope.covers(p))) for k in kernels]
            kernels = [k for k in kernels if k.paths]
        return RunningKernelList(
            kernels=[
                RunningKernelInfo(
                    id=k.id,
                    name=k.name,
                    state=k.state,
                    last_activity=k.last_activity,
                    connections=k.connections,
                    paths=list(k.paths),
                )
                for k in kernels[:MAX_LISTED]
            ],
            truncated=len(kernels) > MAX_LISTED,
        )

    async def set_notebook_kernel(ctx: Context, path: NotebookPath, kernel_name: KernelName) -> NotebookKernel:
        """Switch a notebook's kernel (metadata, session)."""
        await authorize(ctx, *WRITE)
        path = await b.contents.require(path, "notebook")
        spec = await b.kernels.kernelspec(kernel_name)
        change = await b.kernels.change_kernel(path, spec)
        write_kernelspec(await b.rooms.notebook(path, b.actors.of(ctx)), spec)
        kernel = change.kernel
        return NotebookKernel(
            path=path,
            kernelspec=spec_info(spec),
            kernel=KernelInfo(name=kernel.name, id=kernel.id, state=kernel.state) if kernel else None,
            started=change.started,
        )

    return [
        ToolSpec(list_kernelspecs, "execution", "List kernelspecs", ("read", "kernelspecs"), read_only=True),
        ToolSpec(list_kernels, "execution", "List running kernels", ("read", "kernels"), read_only=True),
        ToolSpec(
            set_notebook_kernel,
            "execution",
            "Set the notebook's kernel",
            EXECUTE,
            read_only=False,
            destructive=True,
            idempotent=True,
        ),
    ]
