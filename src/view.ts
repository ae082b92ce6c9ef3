/**
 * The person's view, moved by an agent they allowed (show_in_jupyterlab; docs/awareness.md).
 *
 * The server announces a request on Jupyter's event bus (the socket every JupyterLab tab already keeps open)
 * with its id and whom it is for, never what to show: a tab of that person claims it over REST, which answers
 * only that person and only once, then opens the document, selects the cell and scrolls it into view, and
 * reports whether it did. So the agent is told the truth, and no one else's tab (nor a forged event) shows
 * anything. Nothing but "open this document at this cell" is ever done: no command comes from an agent.
 */
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Widget } from '@lumino/widgets';

import { request } from './api';
import { trans } from './i18n';

/** The `$id` of the server's event schema (services/event_schemas/show_request/v1.yaml). */
export const SHOW_SCHEMA =
  'https://github.com/jupyter-pair-mcp/jupyter-pair-mcp/events/show_request/v1';

/** A hidden tab waits this long before claiming, so a tab the person is looking at takes the request. */
const HIDDEN_DELAY_MS = 1500;
/** How long a cell has to appear in a notebook just opened (its cells come from the room). */
const CELL_WAIT_MS = 5000;

/** A claimed request: what to show, and the ticket to report with. */
export interface IShowRequest {
  path: string;
  cellId: string | null;
  ticket: string;
}

/** The request an event announces for this tab's user (null: not a show request, or someone else's). */
export function requestOf(event: unknown, username: string): string | null {
  const data =
    event !== null && typeof event === 'object'
      ? (event as Record<string, unknown>)
      : {};
  const id = typeof data.request === 'string' ? data.request : '';
  const to = typeof data.to === 'string' ? data.to : '';
  if (data.schema_id !== SHOW_SCHEMA || !/^[0-9a-f]{1,32}$/.test(id)) {
    return null;
  }
  return to && username && to !== username ? null : id;
}

/** A claim's answer, or null when it is not one. */
export function parseClaim(body: unknown): IShowRequest | null {
  const data =
    body !== null && typeof body === 'object'
      ? (body as Record<string, unknown>)
      : {};
  if (typeof data.path !== 'string' || typeof data.ticket !== 'string') {
    return null;
  }
  const cellId = typeof data.cell_id === 'string' ? data.cell_id : null;
  return { path: data.path, cellId, ticket: data.ticket };
}

/** Let (or stop letting) a grant's agent move this person's view. */
export function setMayMoveView(
  grantId: string,
  allowed: boolean
): Promise<unknown> {
  return request(`grants/${encodeURIComponent(grantId)}`, {
    method: 'PATCH',
    body: JSON.stringify({ may_move_view: allowed })
  });
}

function post(endpoint: string, body: Record<string, unknown>) {
  return request(endpoint, { method: 'POST', body: JSON.stringify(body) });
}

const delay = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));

/** The notebook parts of a document widget this uses (duck-typed: any notebook panel has them). */
interface INotebookLike {
  widgets: ReadonlyArray<{ model: { id: string } }>;
  activeCellIndex: number;
  deselectAll(): void;
  scrollToItem(index: number, align?: string): Promise<void>;
}

function notebookOf(widget: Widget): INotebookLike | null {
  const content = (widget as unknown as { content?: unknown }).content;
  const notebook = content as INotebookLike | undefined;
  return notebook &&
    Array.isArray(notebook.widgets) &&
    typeof notebook.scrollToItem === 'function'
    ? notebook
    : null;
}

/** Open `path` in this JupyterLab and, with `cellId`, make that cell the active one, in view. */
async function reveal(
  app: JupyterFrontEnd,
  path: string,
  cellId: string | null
): Promise<void> {
  const widget = (await app.commands.execute('docmanager:open', {
    path
  })) as Widget | undefined;
  if (!widget) {
    throw new Error(trans.__('JupyterLab could not open %1', path));
  }
  app.shell.activateById(widget.id);
  const context = (widget as unknown as { context?: { ready?: Promise<void> } })
    .context;
  await context?.ready;
  if (cellId === null) {
    return;
  }
  const notebook = notebookOf(widget);
  if (!notebook) {
    throw new Error(trans.__('%1 did not open as a notebook', path));
  }
  let index = -1;
  for (let waited = 0; waited <= CELL_WAIT_MS; waited += 100) {
    index = notebook.widgets.findIndex(cell => cell.model.id === cellId);
    if (index >= 0) {
      break;
    }
    await delay(100);
  }
  if (index < 0) {
    throw new Error(trans.__('cell %1 is not in %2 here', cellId, path));
  }
  notebook.deselectAll();
  notebook.activeCellIndex = index;
  await notebook.scrollToItem(index, 'center');
}

/** Take request `id` (unless another tab did), show it, and say how it went. */
async function show(app: JupyterFrontEnd, id: string): Promise<void> {
  if (document.hidden) {
    await delay(HIDDEN_DELAY_MS);
  }
  let claimed: IShowRequest | null;
  try {
    claimed = parseClaim(await post(`show/${id}/claim`, {}));
  } catch {
    return; // another tab took it, or it is not this person's: nothing to do
  }
  if (!claimed) {
    return;
  }
  const { ticket } = claimed;
  try {
    await reveal(app, claimed.path, claimed.cellId);
    await post(`show/${id}/done`, { ticket, ok: true });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    await post(`show/${id}/done`, { ticket, ok: false, message }).catch(
      () => undefined
    );
  }
}

/** Act on the show requests for this tab's user, from now on. */
export function followShowRequests(app: JupyterFrontEnd): void {
  const services = app.serviceManager as Partial<
    Pick<typeof app.serviceManager, 'events' | 'user'>
  >;
  services.events?.stream.connect((_, event) => {
    const id = requestOf(event, services.user?.identity?.username ?? '');
    if (id !== null) {
      void show(app, id);
    }
  });
}
