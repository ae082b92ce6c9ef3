"""Prompts over the wire: listed with described arguments, rendered live, naming only tools the server lists."""

from __future__ import annotations

import re
from typing import Any

import pytest
from jupyter_server.auth.authorizer import Authorizer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from .conftest import call_tool, within

pytestmark = pytest.mark.usefixtures("jp_serverapp")

PROMPTS = {
    "review_notebook": ["path"],
    "fix_failing_cell": ["path", "cell_id"],
    "explain_cell_output": ["path", "cell_id"],
}
ERROR = {
    "output_type": "error",
    "ename": "ZeroDivisionError",
    "evalue": "division by zero",
    "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"],
}
CELLS = [
    {"cell_type": "markdown", "source": "# Ratios", "id": "intro"},
    {
        "cell_type": "code",
        "source": "total = 10",
        "id": "setup",
        "execution_count": 1,
        "outputs": [{"output_type": "stream", "name": "stdout", "text": "ready\n"}],
    },
    {"cell_type": "code", "source": "ratio = total / 0", "id": "broken", "execution_count": 2, "outputs": [ERROR]},
]
#: Result fields and placeholders the prompts may name besides tools and parameters.
RESULT_WORDS = {"next_index", "output_type", "execution_count", "cell_ids"}


def calls(text: str) -> list[tuple[str, list[str]]]:
    """Every ``name(arg=..., ...)`` written in ``text``: the name and its top-level argument names."""
    found = []
    for match in re.finditer(r"\b([a-z][a-z0-9_]*)\(", text):
        depth, quoted, start, parts = 1, False, match.end(), []
        i = start
        while depth:
            ch = text[i]
            if ch == '"' and text[i - 1] != "\\":
                quoted = not quoted
            elif not quoted and ch in "([{":
                depth += 1
            elif not quoted and ch in ")]}":
                depth -= 1
            elif not quoted and ch == "," and depth == 1:
                parts.append(text[start:i])
                start = i + 1
            i += 1
        parts.append(text[start : i - 1])
        names = [part.split("=", 1)[0].strip() for part in parts if "=" in part.split('"', 1)[0]]
        found.append((match.group(1), names))
    return found


def properties(schema: dict[str, Any]) -> set[str]:
    """Every property name at any depth of an input schema (definitions included)."""
    names: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            names.update((node.get("properties") or {}).keys())
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return names


async def check_mentions(client: Any, text: str) -> set[str]:
    """Assert every tool call in ``text`` names a listed tool with parameters it has; return the tools named."""
    tools = {tool.name: tool.input_schema for tool in (await within(client.list_tools())).tools}
    named = set()
    for name, arguments in calls(text):
        assert name in tools, f"the prompt names {name}(), which tools/list does not list"
        top = set(tools[name].get("properties", {}))
        assert set(arguments) <= top, f"{name}() has no parameter(s) {set(arguments) - top}"
        named.add(name)
    # snake_case words outside calls too: each a tool, a parameter of one, or a result field
    known = set(tools) | set().union(*(properties(s) for s in tools.values())) | RESULT_WORDS
    words = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", text))
    assert words <= known, f"the prompt names {words - known}, which is no tool, parameter or result field"
    return named


async def prompt_text(client: Any, name: str, **arguments: str) -> str:
    result = await within(client.get_prompt(name, arguments))
    [message] = result.messages
    assert message.role == "user"
    return str(message.content.text)


async def refused(client: Any, name: str, **arguments: str) -> str:
    with pytest.raises(MCPError) as caught:
        await within(client.get_prompt(name, arguments))
    assert caught.value.code == INVALID_PARAMS, caught.value.error
    return caught.value.message


async def test_prompts_are_listed_with_described_arguments(mcp_client: Any) -> None:
    async with mcp_client() as client:
        listed = (await within(client.list_prompts())).prompts
        assert {p.name: [a.name for a in p.arguments or []] for p in listed} == PROMPTS
        for prompt in listed:
            assert prompt.description and prompt.title
            for argument in prompt.arguments or []:
                assert argument.description, f"{prompt.name}.{argument.name} has no description"
                assert argument.required is not (prompt.name == "fix_failing_cell" and argument.name == "cell_id")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_each_prompt_renders_with_the_path_and_only_real_tools(
    mcp_client: Any, make_notebook: Any, mode: str
) -> None:
    path = make_notebook("work/ratios.ipynb", CELLS)
    async with mcp_client(mode=mode) as client:
        review = await prompt_text(client, "review_notebook", path=path)
        assert '"work/ratios.ipynb"' in review
        assert {"get_notebook", "batch_update_notebook_cells"} <= await check_mentions(client, review)
        assert "total = 10" not in review  # instructions only: the agent reads the notebook itself

        fix = await prompt_text(client, "fix_failing_cell", path=path)
        assert {"get_notebook", "batch_update_notebook_cells", "execute_notebook_cell"} <= await check_mentions(
            client, fix
        )
        fix_cell = await prompt_text(client, "fix_failing_cell", path=path, cell_id="broken")
        assert "ratio = total / 0" in fix_cell and "ZeroDivisionError: division by zero" in fix_cell
        assert "\x1b" not in fix_cell
        await check_mentions(client, fix_cell)

        explain = await prompt_text(client, "explain_cell_output", path=path, cell_id="setup")
        assert "total = 10" in explain and "ready" in explain
        assert "total / 0" not in explain  # only the cell asked about
        await check_mentions(client, explain)

        # the embedded cell carries the revision get_notebook serves: an edit can be based on it
        [revision] = re.findall(r'"base_revision": "([^"<]+)"', fix_cell)
        read = await call_tool(client, "get_notebook", path=path, cell_ids=["broken"])
        assert read["cells"][0]["revision"] == revision


async def test_a_person_typing_after_the_prompt_keeps_their_text_when_the_fix_lands(
    mcp_client: Any, make_notebook: Any, collaborator: Any
) -> None:
    path = make_notebook("shared.ipynb", CELLS)
    async with collaborator(path) as human, mcp_client() as client:
        fix = await prompt_text(client, "fix_failing_cell", path=path, cell_id="broken")
        [revision] = re.findall(r'"base_revision": "([^"<]+)"', fix)
        human.type_into(2, 0, "# checked\n")
        await human.wait_until(lambda: human.source(2).startswith("# checked"))
        await call_tool(
            client,
            "batch_update_notebook_cells",
            path=path,
            exec=False,
            updates=[{"cell_id": "broken", "content": "ratio = total / 2", "base_revision": revision}],
        )
        await human.wait_until(lambda: human.source(2) == "# checked\nratio = total / 2")


async def test_a_big_cell_is_embedded_cut_with_the_way_to_read_it_all(mcp_client: Any, make_notebook: Any) -> None:
    outputs = [{"output_type": "stream", "name": "stdout", "text": f"line {i}\n" * 400} for i in range(40)]
    cells = [{"cell_type": "code", "source": "x" * 50_000, "id": "big", "execution_count": 1, "outputs": outputs}]
    path = make_notebook("big.ipynb", cells)
    async with mcp_client() as client:
        text = await prompt_text(client, "explain_cell_output", path=path, cell_id="big")
        assert len(text) < 16_000
        assert 'get_notebook(path="big.ipynb", cell_ids=["big"])' in text
        assert "outputs left out" in text


@pytest.mark.parametrize(
    "mcp_config",
    [{"read_only": True}, {"tool_groups": ["notebook", "document", "awareness"]}],
    ids=["read-only", "no-execution"],
)
async def test_prompts_name_only_the_tools_this_server_lists(
    mcp_client: Any, make_notebook: Any, mcp_config: dict[str, Any]
) -> None:
    path = make_notebook("limited.ipynb", CELLS)
    async with mcp_client() as client:
        for name, arguments in [
            ("review_notebook", {"path": path}),
            ("fix_failing_cell", {"path": path}),
            ("fix_failing_cell", {"path": path, "cell_id": "broken"}),
            ("explain_cell_output", {"path": path, "cell_id": "broken"}),
        ]:
            text = await prompt_text(client, name, **arguments)
            named = await check_mentions(client, text)
            assert "execute_notebook_cell" not in named
            if mcp_config.get("read_only"):
                assert named <= {"get_notebook"}, (name, named)


async def test_bad_requests_are_invalid_params_errors_that_say_what_to_fix(mcp_client: Any, make_notebook: Any) -> None:
    path = make_notebook("errors.ipynb", CELLS)
    async with mcp_client() as client:
        message = await refused(client, "review_notebok", path=path)
        assert "unknown prompt 'review_notebok'" in message and "review_notebook" in message
        message = await refused(client, "explain_cell_output", path=path)
        assert "needs the argument 'cell_id'" in message
        message = await refused(client, "review_notebook")
        assert "needs the argument 'path'" in message
        message = await refused(client, "review_notebook", path=path, cell="x")
        assert "unknown argument 'cell'" in message
        message = await refused(client, "review_notebook", path="missing.ipynb")
        assert "no notebook at 'missing.ipynb'" in message
        message = await refused(client, "explain_cell_output", path=path, cell_id="nope")
        assert "no cell with id 'nope'" in message
        message = await refused(client, "review_notebook", path="../outside.ipynb")
        assert "leaves the Jupyter root" in message
        # an optional argument a client's form left empty is absent
        assert "get_notebook" in await prompt_text(client, "fix_failing_cell", path=path, cell_id="")


class NoReadAuthorizer(Authorizer):  # type: ignore[misc]
    """May reach the endpoint, may not read contents through it."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        from jupyter_pair_mcp.transport.handlers import MCPHandler

        if isinstance(handler, MCPHandler) and getattr(handler, "_bridge", None) is not None:
            return not (action == "read" and resource == "contents")
        return True


class TestAuthorization:
    @pytest.fixture
    def jp_server_config(self, jp_server_config: Any) -> Any:
        jp_server_config.ServerApp.authorizer_class = NoReadAuthorizer
        return jp_server_config

    async def test_getting_a_prompt_needs_read_on_contents(self, mcp_client: Any, make_notebook: Any) -> None:
        path = make_notebook("secret.ipynb", CELLS)
        async with mcp_client() as client:
            assert len((await within(client.list_prompts())).prompts) == 3
            message = await refused(client, "explain_cell_output", path=path, cell_id="setup")
            assert "not authorized to read contents" in message
            assert "total = 10" not in message
