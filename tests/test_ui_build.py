"""The server says when the JupyterLab extension (the UI) is not built, and works without it."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from jupyter_pair_mcp import app

NOT_BUILT = "JupyterLab UI of jupyter-pair-mcp is not built"


def test_the_labextension_is_found_in_the_package_or_a_data_path(tmp_path: Path) -> None:
    package, data = tmp_path / "pkg", tmp_path / "share"
    assert not app.labextension_found(package, [str(data)])
    # A data path holding only install.json (a wheel built without Node) has no extension.
    (data / "jupyter-pair-mcp").mkdir(parents=True)
    (data / "jupyter-pair-mcp" / "install.json").write_text("{}")
    assert not app.labextension_found(package, [str(data)])
    (data / "jupyter-pair-mcp" / "package.json").write_text(json.dumps({"name": "jupyter-pair-mcp"}))
    assert app.labextension_found(package, [str(data)])
    (package / "labextension").mkdir(parents=True)
    (package / "labextension" / "package.json").write_text("{}")
    assert app.labextension_found(package, [])


@pytest.mark.parametrize("built", [False, True])
async def test_the_start_says_when_the_ui_is_not_built(
    built: bool, extension: Any, jp_serverapp: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "labextension_found", lambda *args: built)
    caplog.set_level(logging.INFO)
    await extension._start_jupyter_server_extension(jp_serverapp)
    lines = [r.getMessage() for r in caplog.records if NOT_BUILT in r.getMessage()]
    assert len(lines) == (0 if built else 1)
    if lines:
        assert "Node" in lines[0]
        assert str(Path(app.__file__).parent) not in lines[0]  # no absolute server path
    # The endpoint is served either way.
    assert any(r.getMessage().startswith("MCP endpoint:") for r in caplog.records)


def test_package_json_pyproject_and_the_package_name_the_same_extension_folder() -> None:
    """npm builds into outputDir, the wheel ships it under the extension's name, Jupyter looks for that name."""
    import tomllib

    import jupyter_pair_mcp

    root = Path(app.__file__).parent.parent
    package = json.loads((root / "package.json").read_text())
    wheel = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert package["name"] == app.LABEXTENSION
    output = package["jupyterlab"]["outputDir"]
    assert output == "jupyter_pair_mcp/labextension"
    assert wheel["shared-data"][output] == f"share/jupyter/labextensions/{app.LABEXTENSION}"
    [paths] = jupyter_pair_mcp._jupyter_labextension_paths()
    assert paths == {"src": "labextension", "dest": app.LABEXTENSION}
