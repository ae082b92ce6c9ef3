"""Live collaboration rooms: the only package that touches jupyter_server_ydoc, jupyter_ydoc and pycrdt.

This is the package's face: :class:`RoomsAdapter` (``adapter.py``) hands tools one call's view of a
live notebook (``notebook.py``; its plain values in ``cells.py``) or text document (``textdoc.py``);
opening a room whose file may be broken (``opening.py``), writing it for sure (``persist.py``), merging an
agent's edit from what it read (``merge.py``), history, undo, forks, awareness and execution outputs have a
module each.
"""

from .adapter import ContentWatch, RoomInfo, RoomsAdapter
from .cells import CellChange, CellData, CellUpdate, NewCell
from .edits import Edit, EditJournal
from .history import Row
from .merge import MergeConflict, TextOp
from .notebook import AGENT_ORIGIN, NotebookView
from .replace import Replacement, plan_notebook, plan_text
from .textdoc import TextView

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
    "plan_notebook",
    "plan_text",
]
