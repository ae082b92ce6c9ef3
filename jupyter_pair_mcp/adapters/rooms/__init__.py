"""Live collaboration rooms: the only package that touches jupyter_server_ydoc, jupyter_ydoc and pycrdt.

This is the package's face: :class:`RoomsAdapter` (``adapter.py``, over ``lookups.py``) hands tools one call's view of a
live notebook (``notebook.py``; its plain values in ``cells.py``) or text document (``textdoc.py``);
opening a room whose file may be broken (``opening.py``), writing it for sure (``persist.py``), merging an
agent's edit from what it read (``merge.py``), history, undo, forks, awareness and execution outputs have a
module each.
"""

from jupyter_pair_mcp.adapters.rooms.adapter import RoomsAdapter
from jupyter_pair_mcp.adapters.rooms.cells import CellChange, CellData, CellUpdate, NewCell, cell_digests
from jupyter_pair_mcp.adapters.rooms.edits import Edit, EditJournal
from jupyter_pair_mcp.adapters.rooms.history import Row
from jupyter_pair_mcp.adapters.rooms.lookups import ContentWatch, RoomInfo
from jupyter_pair_mcp.adapters.rooms.merge import MergeConflict, TextOp
from jupyter_pair_mcp.adapters.rooms.notebook import AGENT_ORIGIN, NotebookView
from jupyter_pair_mcp.adapters.rooms.replace import Replacement, plan_notebook, plan_text
from jupyter_pair_mcp.adapters.rooms.textdoc import TextView

__all__ = [
    "AGENT_ORIGIN",
    "CellChange",
    "CellData",
    "CellUpdate",
    "ContentWatch",
    "Edit",
    "EditJournal",
    "MergeConflict",
    "NewCell",
    "NotebookView",
    "Replacement",
    "RoomInfo",
    "RoomsAdapter",
    "Row",
    "TextOp",
    "TextView",
    "cell_digests",
    "plan_notebook",
    "plan_text",
]
