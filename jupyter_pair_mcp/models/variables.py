"""Result models of the variable and scratch-execution tools (``list_variables``, ``get_variable``,
``execute_code``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from jupyter_pair_mcp.models.results import RenderedOutput

Via = Literal["debugger", "kernel"]


class Variable(BaseModel):
    name: str
    type: str = Field(description="Its type, prefixed by the package outside builtins (numpy.ndarray).")
    value: str = Field(description="Its repr, cut at the limit with a marker saying how much was cut.")
    size: int | None = Field(default=None, description="len() of a string or container.")
    shape: list[int] | None = Field(default=None, description="Shape of an array or frame.")
    dtype: str | None = Field(default=None, description="dtype of an array or series.")


class VariableList(BaseModel):
    path: str
    variables: list[Variable] = Field(description="Sorted by name; modules, imports and IPython's own names left out.")
    total: int = Field(description="How many variables the kernel holds (of the kinds listed).")
    truncated: bool = Field(description="True when more variables exist than were returned: get_variable reads any.")
    via: Via = Field(description="debugger: read through the kernel's started debugger; kernel: a silent request.")


class VariableDetail(Variable):
    path: str
    columns: list[str] | None = Field(default=None, description="A frame's columns as 'name: dtype'.")
    via: Via


class ScratchResult(BaseModel):
    status: Literal["ok", "error", "timeout", "aborted"] = Field(
        description="ok; error (the code raised); timeout (interrupted after timeout seconds); aborted."
    )
    outputs: list[RenderedOutput]
