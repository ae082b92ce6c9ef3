/**
 * Cells (and whole notebooks) a person locks against AI agents: a lock button on the cell toolbar and on the
 * notebook toolbar, and a lock mark on each locked cell.
 *
 * The lock is `metadata.jupyter_pair_mcp.locked = {by, at}` in the cell's (or the notebook's) metadata, written
 * through the shared model: it is the person's edit in the room, every collaborator sees it, and it is saved
 * with the file. The server reads it and refuses agents' edits, runs and suggestions there (docs/notebooks.md).
 * The buttons are declared in schema/plugin.json (`jupyter.lab.toolbars`), as JupyterLab declares its own.
 */
import type { JupyterFrontEnd } from '@jupyterlab/application';
import type {
  INotebookTracker,
  Notebook,
  NotebookPanel
} from '@jupyterlab/notebook';
import { lockIcon } from '@jupyterlab/ui-components';

import { trans } from './i18n';
import { lockOf, setLock } from './lockmodel';
import { isolated } from './model';

export const CELL_LOCK_COMMAND = 'jupyter-pair-mcp:toggle-cell-lock';
export const NOTEBOOK_LOCK_COMMAND = 'jupyter-pair-mcp:toggle-notebook-lock';
/** Classes of the marks (the browser tests select on them). */
export const LOCKED_CELL = 'jp-mcp-locked-cell';
export const LOCKED_NOTEBOOK = 'jp-mcp-locked-notebook';
const LOCK_MARK = 'jp-mcp-lock-mark';
/** The class of a lock button whose cell (or notebook) is locked. */
export const LOCK_ON = 'jp-mcp-lock-on';

/** A cell widget of a notebook. */
type Cell = Notebook['widgets'][number];

/** Draw (or remove) the lock mark on one cell widget. */
export function drawLock(cell: Cell): void {
  const lock = lockOf(cell.model);
  const node = cell.node;
  const mark = node.querySelector(`:scope > .${LOCK_MARK}`);
  if (!lock) {
    node.classList.remove(LOCKED_CELL);
    mark?.remove();
    return;
  }
  node.classList.add(LOCKED_CELL);
  const text = trans.__('Locked against AI agents by %1', isolated(lock.by));
  const badge = (mark as HTMLElement | null) ?? document.createElement('div');
  badge.className = LOCK_MARK;
  badge.setAttribute('role', 'img');
  badge.setAttribute('aria-label', text);
  badge.title = text;
  badge.setAttribute('data-locked-by', lock.by);
  if (!mark) {
    lockIcon.element({ container: badge, tag: 'span' });
    node.appendChild(badge);
  }
}

/** Draw the marks of every cell of a notebook (on a change of its cells' list: not on typing). */
export function drawLocks(notebook: Notebook): void {
  for (const cell of notebook.widgets) {
    drawLock(cell);
  }
}

/** Keep the marks of one notebook current: each cell's metadata change redraws that cell. */
function follow(panel: NotebookPanel, changed: () => void): void {
  const notebook = panel.content;
  const watched = new WeakSet<object>();
  const watch = () => {
    for (const cell of notebook.widgets) {
      const model = cell.model;
      if (model && !watched.has(model)) {
        watched.add(model);
        model.metadataChanged.connect(() => {
          const widget = notebook.widgets.find(w => w.model === model);
          if (widget) {
            drawLock(widget);
          }
          changed();
        });
      }
    }
    drawLocks(notebook);
  };
  const drawNotebook = () => {
    const lock = lockOf(panel.model);
    panel.node.classList.toggle(LOCKED_NOTEBOOK, !!lock);
    changed();
  };
  void panel.context.ready.then(() => {
    watch();
    drawNotebook();
    panel.model?.cells.changed.connect(() => setTimeout(watch, 0));
    panel.model?.metadataChanged.connect(drawNotebook);
  });
}

/** The person's name, as the lock says who set it. */
function personName(app: JupyterFrontEnd): string {
  const identity = app.serviceManager.user.identity;
  return (
    identity?.display_name ||
    identity?.name ||
    identity?.username ||
    ''
  ).trim();
}

/** Register the lock commands (the toolbar buttons run them) and draw the marks on every notebook. */
export function activateLocks(
  app: JupyterFrontEnd,
  notebooks: INotebookTracker
): void {
  const { commands } = app;
  const refresh = () => {
    commands.notifyCommandChanged(CELL_LOCK_COMMAND);
    commands.notifyCommandChanged(NOTEBOOK_LOCK_COMMAND);
  };
  const activeCell = () => notebooks.currentWidget?.content.activeCell ?? null;
  const notebookModel = () => notebooks.currentWidget?.model ?? null;
  commands.addCommand(CELL_LOCK_COMMAND, {
    label: () =>
      lockOf(activeCell()?.model)
        ? trans.__('Unlock Cell for AI Agents')
        : trans.__('Lock Cell Against AI Agents'),
    caption: () => {
      const lock = lockOf(activeCell()?.model);
      return lock
        ? trans.__(
            'Locked against AI agents by %1: click to let agents edit and run it',
            isolated(lock.by)
          )
        : trans.__(
            'Lock this cell: AI agents may not edit, run or suggest changes to it'
          );
    },
    icon: lockIcon,
    // The state is in the accessible name (the caption) and a class: JupyterLab's toggled toolbar buttons put
    // aria-pressed on a custom element without a role, which assistive technology may not be given.
    className: () => (lockOf(activeCell()?.model) ? LOCK_ON : ''),
    isEnabled: () => activeCell() !== null,
    describedBy: { args: { type: 'object', properties: {} } },
    execute: () => {
      const cell = activeCell();
      if (cell) {
        setLock(cell.model, lockOf(cell.model) ? null : personName(app));
        drawLock(cell);
        refresh();
      }
    }
  });
  commands.addCommand(NOTEBOOK_LOCK_COMMAND, {
    label: () =>
      lockOf(notebookModel())
        ? trans.__('Unlock Notebook for AI Agents')
        : trans.__('Lock Notebook Against AI Agents'),
    caption: () => {
      const lock = lockOf(notebookModel());
      return lock
        ? trans.__(
            'Notebook locked against AI agents by %1: click to let agents edit it',
            isolated(lock.by)
          )
        : trans.__(
            'Lock this notebook: AI agents may not edit, run or suggest changes to any of its cells'
          );
    },
    icon: lockIcon,
    className: () => (lockOf(notebookModel()) ? LOCK_ON : ''),
    isEnabled: () => notebookModel() !== null,
    describedBy: { args: { type: 'object', properties: {} } },
    execute: () => {
      const model = notebookModel();
      if (model) {
        setLock(model, lockOf(model) ? null : personName(app));
        refresh();
      }
    }
  });
  notebooks.widgetAdded.connect((_, panel) => follow(panel, refresh));
  notebooks.forEach(panel => follow(panel, refresh));
  notebooks.activeCellChanged.connect(refresh);
  notebooks.currentChanged.connect(refresh);
}
