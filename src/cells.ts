/**
 * Marks drawn on a notebook's cells: a gutter bar in the colour of each agent working in a cell, and a
 * labelled highlight on a cell an agent points at. Drawn on the cell widgets' nodes, which exist for
 * every cell whether or not it is on screen (so a mark is there before the person scrolls to it).
 */
import type { Notebook } from '@jupyterlab/notebook';

import { trans } from './i18n';
import { IMarks, isolated } from './model';

/** Classes and attributes of the marks (the browser tests select on them). */
export const AGENT_CELL = 'jp-mcp-agent-cell';
export const POINTED_CELL = 'jp-mcp-pointed-cell';
const GUTTER = 'jp-mcp-gutter';
const POINT_LABEL = 'jp-mcp-point-label';

/**
 * Redraw the marks on the notebook's cells. Only cells marked before or to be marked now are touched, so
 * a redraw costs the marks, not the notebook's length (it runs on awareness changes).
 */
export function drawMarks(
  notebook: Notebook,
  marks: IMarks,
  previous: Set<HTMLElement>,
  dismiss: (agentKey: string) => void
): Set<HTMLElement> {
  const now = new Set<HTMLElement>();
  const wanted = new Set([...marks.working.keys(), ...marks.points.keys()]);
  for (const cell of notebook.widgets) {
    const node = cell.node;
    const id = cell.model?.id;
    if (!wanted.has(id) && !previous.has(node)) {
      continue;
    }
    clear(node);
    const working = marks.working.get(id) ?? [];
    const points = marks.points.get(id) ?? [];
    if (working.length) {
      node.classList.add(AGENT_CELL);
      node.style.setProperty('--jp-mcp-agent-color', working[0].color);
      node.setAttribute('data-mcp-agents', working.map(a => a.key).join(' '));
      const gutter = document.createElement('div');
      gutter.className = GUTTER;
      gutter.setAttribute('data-cell-id', id);
      for (const agent of working) {
        const mark = document.createElement('span');
        mark.className = 'jp-mcp-gutter-mark';
        mark.setAttribute('data-mcp-agent-key', agent.key);
        mark.setAttribute('title', `${agent.name} works in this cell`);
        mark.setAttribute('aria-label', `${agent.name} works in this cell`);
        mark.setAttribute('role', 'img');
        mark.style.setProperty('--jp-mcp-color', agent.color);
        gutter.appendChild(mark);
      }
      node.appendChild(gutter);
    }
    if (points.length) {
      node.classList.add(POINTED_CELL);
      node.style.setProperty('--jp-mcp-point-color', points[0].agent.color);
      for (const { agent, point } of points) {
        const label = document.createElement('div');
        label.className = POINT_LABEL;
        label.setAttribute('data-mcp-agent-key', agent.key);
        label.setAttribute('data-cell-id', id);
        label.setAttribute('role', 'note');
        label.style.setProperty('--jp-mcp-color', agent.color);
        const who = document.createElement('span');
        who.className = 'jp-mcp-point-who';
        who.textContent = `☞ ${agent.name}`;
        const message = document.createElement('span');
        message.className = 'jp-mcp-point-message';
        message.textContent = point.message;
        const close = document.createElement('button');
        close.className = 'jp-mcp-point-dismiss';
        close.type = 'button';
        close.textContent = '×';
        close.title = trans.__('Dismiss');
        close.setAttribute(
          'aria-label',
          trans.__('Dismiss the note of %1', isolated(agent.name))
        );
        close.addEventListener('click', () => dismiss(agent.key));
        label.append(who, message, close);
        node.insertBefore(label, node.firstChild);
      }
    }
    if (working.length || points.length) {
      now.add(node);
    }
  }
  return now;
}

/** Remove every mark this extension drew on a cell node. */
export function clear(node: HTMLElement): void {
  node.classList.remove(AGENT_CELL, POINTED_CELL);
  node.style.removeProperty('--jp-mcp-agent-color');
  node.style.removeProperty('--jp-mcp-point-color');
  node.removeAttribute('data-mcp-agents');
  for (const child of Array.from(
    node.querySelectorAll(`:scope > .${GUTTER}, :scope > .${POINT_LABEL}`)
  )) {
    child.remove();
  }
}

/** Scroll a notebook to a cell by id (false when the cell is not there any more). */
export async function showCell(
  notebook: Notebook,
  cellId: string
): Promise<boolean> {
  const index = notebook.widgets.findIndex(
    widget => widget.model?.id === cellId
  );
  if (index < 0) {
    return false;
  }
  const cell = notebook.widgets[index];
  // Not notebook.scrollToCell: it also selects and activates the cell, moving the person's own cursor.
  try {
    await notebook.scrollToItem(index, 'center');
  } catch {
    cell.node.scrollIntoView({ block: 'center' });
  }
  cell.node.classList.add('jp-mcp-flash');
  setTimeout(() => cell.node.classList.remove('jp-mcp-flash'), 1200);
  return true;
}
