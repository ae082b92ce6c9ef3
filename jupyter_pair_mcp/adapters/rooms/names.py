"""Which names a notebook's code cells use before any cell above defines them, read statically with ``ast``.

Nothing runs: the cells are parsed, never executed. The check is conservative, because a reported name that is in
fact defined sends an agent chasing nothing, while a missed one is only what the notebook said before:

- IPython syntax is blanked before parsing: line magics, shell (``!``) and help (``?``) lines become ``pass``
  (``x = !ls`` and ``x = %sx ls`` keep their assignment, ``%time x = f()`` keeps its code), and so do automagic
  lines (``pip install x``: a magic's name without ``%``) where they stop the parse; a cell magic makes the cell
  not Python (skipped) unless it only times or captures Python (``%%time``, ``%%timeit``, ``%%capture``).
- Only code that runs when the cell runs is read for uses: function and lambda bodies run when called (perhaps
  after a later cell), so their names are not checked; annotations are not checked either.
- A name stored anywhere in a cell (an assignment, ``for``/``with``/``except``/``import``/``def``/``class``/walrus/
  ``match`` target, a comprehension variable, an augmented assignment) counts as defined in the whole cell: order
  inside one cell is not judged. Names a function declares ``global`` count as defined where the function is.
- Builtins, IPython's own names (``display``, ``In``, ``_1``…) and dunder names are always defined; ``del`` is
  ignored (it never makes a report).
- What may define names unseen stops the check for the rest of the notebook: ``from m import *``, a call of
  ``exec``, ``eval``, ``globals``, ``vars``, ``locals``, ``get_ipython`` or ``__import__``, a magic not known to
  leave the namespace alone (``%run``, ``%store``…), a cell magic other than the known ones, and a cell that does
  not parse (reported as such: what it defines is unknown until it is fixed), a cell over 100,000 characters (not
  parsed: seconds of work for a hostile one).
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field

#: Names IPython defines in every kernel.
IPYTHON_NAMES = frozenset({"In", "Out", "get_ipython", "exit", "quit", "display", "_", "__", "___"})
IPYTHON_NAMES |= frozenset({"_i", "_ii", "_iii", "_ih", "_oh", "_dh", "_sh"})
IPYTHON_NAMES |= frozenset({"ls", "pwd", "cd", "pip", "conda", "who", "whos", "clear", "history"})  # automagic alone
_NUMBERED = re.compile(r"_i?\d+$|_i{1,3}$")
KNOWN = frozenset(dir(builtins)) | IPYTHON_NAMES

#: Line magics that define no variable (anything else may, so it stops the check). Word lists, split once.
QUIET_MAGICS = frozenset(
    "matplotlib time timeit pip conda load_ext unload_ext reload_ext config env cd pwd ls who whos who_ls "  # noqa: SIM905
    "autoreload aimport precision xmode debug pdb prun lprun memit mprun history magic lsmagic page pinfo "
    "pinfo2 psearch pdoc pdef psource pfile colors automagic autocall alias unalias bookmark dhist dirs "
    "popd pushd clear cls system sx sc mkdir rmdir rm cp mv cat less more man tb doctest_mode gui "
    "qtconsole connect_info notebook killbgscripts save edit recall rerun logstart logstop logon logoff "
    "logstate tracemalloc".split()
)
#: Cell magics whose body is Python run in the notebook's namespace.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
#: Cell magics whose body is not Python and defines nothing in the namespace.
FOREIGN_CELL_MAGICS = frozenset(
    "bash sh html HTML javascript js markdown latex svg writefile file script perl ruby python2 python3 "  # noqa: SIM905
    "pypy debug".split()
)
#: Line magics run as automagic (without ``%``) that may define names; and how many automagic lines a cell may have.
OPAQUE_MAGICS = frozenset({"run", "store", "load", "loadpy", "reset", "recall", "rerun", "macro"})
AUTOMAGIC_TRIES = 20
#: Calls that may define any name.
OPAQUE_CALLS = frozenset({"exec", "eval", "globals", "vars", "locals", "get_ipython", "__import__"})

_MAGIC = re.compile(r"^(\s*)%([A-Za-z_]\w*)\s*(.*)$")
_HELP = re.compile(r"\?+[\w.*]*|[\w.*]+\?{1,2}")
_SHELL_ASSIGN = re.compile(r"^(\s*)([\w.,\s()\[\]*]+?)\s*=\s*([!%])\s*(\w*)(.*)$")
#: Names kept per cell and characters kept per name in an answer.
MAX_NAMES = 20
MAX_NAME_CHARS = 80
#: A cell longer than this is not parsed (a hostile one costs seconds of parsing): it stops the check, as an
#: unparsed cell does. And past this many characters of code in all, the rest of the notebook is not checked.
MAX_CELL_CHARS = 100_000
MAX_TOTAL_CHARS = 10_000_000


@dataclass
class CellNames:
    """What one cell defines and uses (uses: in the order first met)."""

    defines: set[str] = field(default_factory=set)
    uses: list[str] = field(default_factory=list)
    opaque: bool = False  # may define names unseen: stops the check from this cell on
    syntax: str | None = None  # why the cell does not parse ("line 2: invalid syntax")
    python: bool = True  # False: a cell magic of another language (nothing read)
    unread: bool = False  # too long to parse: what it defines is unknown


def python_source(source: str) -> tuple[str, bool, bool]:
    """``source`` with IPython syntax blanked (line count kept), whether it is Python at all, and whether a magic
    may have defined names unseen."""
    lines = source.split("\n")
    opaque = False
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        name = first[2:].split(None, 1)[0] if len(first) > 2 else ""
        if name not in PYTHON_CELL_MAGICS:
            return "", False, name not in FOREIGN_CELL_MAGICS
        if name == "capture":
            kept = [w for w in first.split()[1:] if not w.startswith("-")]
            lines[0] = f"{kept[0]} = None" if kept and kept[0].isidentifier() else "pass"
        else:
            lines[0] = "pass"
    for number, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or (stripped[0] not in "%!?" and not stripped.endswith("?") and "=" not in stripped):
            continue
        indent = line[: len(line) - len(line.lstrip())]
        assign = _SHELL_ASSIGN.match(line)
        if assign and stripped[0] not in "%!?#":
            kind, magic = assign.group(3), assign.group(4)
            if kind == "%" and magic not in QUIET_MAGICS:
                opaque = True
            lines[number] = f"{indent}{assign.group(2).strip()} = None"
            continue
        magic = _MAGIC.match(line)
        if magic:
            name, rest = magic.group(2), magic.group(3)
            if name in ("time", "timeit", "prun") and rest and not rest.startswith("-"):
                lines[number] = f"{indent}{rest}"
            else:
                opaque = opaque or name not in QUIET_MAGICS
                lines[number] = f"{indent}pass"
        elif stripped[0] == "!" or _HELP.fullmatch(stripped):
            lines[number] = f"{indent}pass"  # shell, help (``obj?``); ``% b`` (a modulo continued) is left
    return "\n".join(lines), True, opaque


def cell_names(source: str) -> CellNames:
    """The names one cell defines and uses (see the module's rules)."""
    found = CellNames()
    if len(source) > MAX_CELL_CHARS:
        found.unread = True
        return found
    code, found.python, found.opaque = python_source(source)
    if not found.python:
        return found
    tree = _parse(code, found)
    if tree is None:
        return found
    first: dict[str, tuple[int, int]] = {}  # each name used: where first
    # An explicit stack, never recursion: a hostile cell nests deeper than Python's recursion limit.
    stack: list[tuple[ast.AST, bool]] = [(tree, True)]  # (node, runs when the cell runs)
    while stack:
        node, runs = stack.pop()
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                at = (node.lineno, node.col_offset)
                if runs and at < first.get(node.id, (1 << 62, 0)):
                    first[node.id] = at
            elif isinstance(node.ctx, ast.Store) and runs:
                found.defines.add(node.id)
            continue
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if runs:
                found.defines.add(node.name)
            body = {id(s) for s in node.body} if not isinstance(node, ast.ClassDef) else set()
            for child in ast.iter_child_nodes(node):
                in_body = id(child) in body
                if isinstance(child, ast.arguments):
                    stack.extend((d, runs) for d in [*child.defaults, *child.kw_defaults] if d is not None)
                elif child is not getattr(node, "returns", None):
                    stack.append((child, runs and not in_body))
            continue
        if isinstance(node, ast.Lambda):
            stack.extend((d, runs) for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None)
            continue
        if isinstance(node, ast.AnnAssign):
            stack.extend((child, runs) for child in (node.target, node.value) if child is not None)
            continue
        if isinstance(node, ast.arg):
            continue  # its annotation is not checked
        _definitions(node, found)
        stack.extend((child, runs) for child in ast.iter_child_nodes(node))
    found.uses = sorted(first, key=first.__getitem__)
    return found


def _parse(code: str, found: CellNames) -> ast.Module | None:
    """``code`` parsed, with IPython's automagic lines (``pip install x``, ``cd data``: a magic's name without its
    ``%``) blanked where they stop the parse; None, with ``found.syntax`` set, when it does not parse."""
    for _ in range(AUTOMAGIC_TRIES):
        try:
            return ast.parse(code)
        except SyntaxError as exc:
            lines, number = code.split("\n"), exc.lineno or 0
            line = lines[number - 1] if 1 <= number <= len(lines) else ""
            word = line.split(None, 1)[0] if line.strip() else ""
            if word not in QUIET_MAGICS and word not in OPAQUE_MAGICS:
                where = f"line {exc.lineno}: " if exc.lineno else ""
                found.syntax = f"{where}{exc.msg}"
                return None
            found.opaque = found.opaque or word in OPAQUE_MAGICS
            lines[number - 1] = line[: len(line) - len(line.lstrip())] + "pass"
            code = "\n".join(lines)
        except (ValueError, RecursionError, MemoryError) as exc:  # null bytes; nesting past the parser's limits
            found.syntax = f"not parsed ({type(exc).__name__})"
            return None
    found.syntax = "not parsed (too many magic lines)"
    return None


def _definitions(node: ast.AST, found: CellNames) -> None:
    """Definitions and opaque constructs of one node that is not a Name."""
    if isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            if alias.name == "*":
                found.opaque = True
            else:
                found.defines.add(alias.asname or alias.name.split(".")[0])
    elif isinstance(node, ast.Global | ast.Nonlocal):
        found.defines.update(node.names)
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
        found.defines.add(node.name)
    elif isinstance(node, ast.MatchMapping) and node.rest:
        found.defines.add(node.rest)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in OPAQUE_CALLS:
        found.opaque = True
    elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
        found.defines.add(node.target.id)  # a use too, but never judged (order in a cell is not)


def known(name: str) -> bool:
    """Defined in every kernel: a builtin, one of IPython's names, a dunder."""
    return name in KNOWN or bool(_NUMBERED.match(name)) or (name.startswith("__") and name.endswith("__"))


@dataclass
class NameReport:
    """Per cell index: names used before any cell above defines them (name -> index of the first cell below that
    does, or None), cells that do not parse, and the first cell from which names are no longer checked."""

    undefined: dict[int, dict[str, int | None]] = field(default_factory=dict)
    syntax: dict[int, str] = field(default_factory=dict)
    unchecked_from: int | None = None


def notebook_names(sources: list[tuple[int, str]]) -> NameReport:
    """The report for code cells ``(index, source)`` in notebook order."""
    report = NameReport()
    cells: list[tuple[int, CellNames]] = []
    total = 0
    for index, source in sources:
        total += len(source)
        cells.append((index, cell_names(source) if total <= MAX_TOTAL_CHARS else CellNames(unread=True)))
    first_definition: dict[str, int] = {}
    for index, names in cells:
        for name in names.defines:
            first_definition.setdefault(name, index)
    defined: set[str] = set()
    for index, names in cells:
        if names.syntax is not None:
            report.syntax[index] = names.syntax
        if (names.opaque or names.unread or names.syntax is not None) and report.unchecked_from is None:
            report.unchecked_from = index
        defined |= names.defines
        if report.unchecked_from is not None:
            continue
        missing: dict[str, int | None] = {}
        for name in names.uses:
            if name in defined or known(name):
                continue
            if len(missing) >= MAX_NAMES:
                break
            later = first_definition.get(name)
            shown = name if len(name) <= MAX_NAME_CHARS else name[: MAX_NAME_CHARS - 1] + "…"
            missing[shown] = later if later is not None and later > index else None
        if missing:
            report.undefined[index] = missing
    return report
