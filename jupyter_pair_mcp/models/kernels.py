"""Result models of the kernel tools (``list_kernelspecs``, ``list_kernels``, ``set_notebook_kernel``)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from jupyter_pair_mcp.models.results import KernelInfo


class KernelSpecInfo(BaseModel):
    name: str = Field(description="What metadata.kernelspec.name and kernel_name say.")
    display_name: str
    language: str


class KernelSpecList(BaseModel):
    kernelspecs: list[KernelSpecInfo]
    default: str = Field(description="The server's default kernel: new notebooks get it.")
    truncated: bool = Field(description="True when more kernelspecs are installed than were returned.")


class RunningKernelInfo(BaseModel):
    id: str
    name: str = Field(description="Its kernelspec.")
    state: str = Field(description="idle, busy, starting, restarting, dead, ...")
    last_activity: str | None = Field(description="ISO 8601 timestamp of its last message.")
    connections: int = Field(description="Websocket connections (JupyterLab pages) to it.")
    paths: list[str] = Field(description="Notebooks (and consoles) whose Jupyter session uses it.")


class RunningKernelList(BaseModel):
    kernels: list[RunningKernelInfo]
    truncated: bool = Field(description="True when more kernels run than were returned.")


class NotebookKernel(BaseModel):
    path: str
    kernelspec: KernelSpecInfo = Field(description="Now in the notebook's metadata.")
    kernel: KernelInfo | None = Field(description="The session's kernel now; null: none runs, the next run starts it.")
    started: bool = Field(description="True when a new kernel replaced the session's (its variables are gone).")
