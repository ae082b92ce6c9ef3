/**
 * Calls to the server's api/mcp REST handlers, through ServerConnection (which adds the token or cookie
 * and the XSRF header Jupyter asks of a POST).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import {
  IGrant,
  IMinted,
  IMintRequest,
  parseGrants,
  parseMinted
} from './grantsmodel';
import { trans } from './i18n';
import { IActivity, IAgents, parseActivity, parseAgents } from './rest';
import {
  ISuggestion,
  ISuggestions,
  parseSuggestion,
  parseSuggestions
} from './suggestions';

/** A refused or failed call, with the server's message when it sent one. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    /** The server's own JSON message (false: no such handler, or not a JSON answer). */
    readonly explained = false
  ) {
    super(message);
  }
}

export async function request(
  endpoint: string,
  init: RequestInit = {},
  query: Record<string, string> = {}
): Promise<unknown> {
  const settings = ServerConnection.makeSettings();
  const url =
    URLExt.join(settings.baseUrl, 'api', 'mcp', endpoint) +
    URLExt.objectToQueryString(query);
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(`the server could not be reached: ${error}`, 0);
  }
  let body: unknown = null;
  try {
    body = await response.json();
  } catch {
    body = null;
  }
  if (!response.ok) {
    const explained =
      body !== null &&
      typeof (body as { message?: unknown }).message === 'string';
    const message = explained
      ? (body as { message: string }).message
      : response.statusText || `HTTP ${response.status}`;
    throw new ApiError(message, response.status, explained);
  }
  return body;
}

function post(
  endpoint: string,
  body: Record<string, unknown>
): Promise<unknown> {
  return request(endpoint, { method: 'POST', body: JSON.stringify(body) });
}

/** Activity entries of a document after `after` (all kept ones when null). */
export async function fetchActivity(
  path: string,
  after: number | null
): Promise<IActivity> {
  const query: Record<string, string> = { path };
  if (after !== null) {
    query.after = String(after);
  }
  return parseActivity(await request('activity', {}, query));
}

/** The agents of a document and whether this person may stop them. */
export async function fetchAgents(path: string): Promise<IAgents> {
  return parseAgents(await request('agents', {}, { path }));
}

/** Stop (or allow again) an agent on a document. */
export function setStopped(
  key: string,
  path: string,
  stopped: boolean
): Promise<unknown> {
  return post(
    `agents/${encodeURIComponent(key)}/${stopped ? 'stop' : 'allow'}`,
    { path }
  );
}

/** Undo an agent's last edit of a document. */
export function undoAgent(path: string, agent: string): Promise<unknown> {
  return post('undo', { path, agent, count: 1 });
}

/** Undo this person's own last restore of a document. */
export function undoRestore(path: string): Promise<unknown> {
  return post('undo', { path, restore: true });
}

/** Restore a document's version; `keepPeople`: take back only the agents' changes since it. */
export function restoreVersion(
  path: string,
  version: string,
  keepPeople = false
): Promise<unknown> {
  return post('restore', { path, version, keep_people_edits: keepPeople });
}

/** The suggestions on a document (api/mcp/suggestions; a 404 without a message: a server without review). */
export async function fetchSuggestions(path: string): Promise<ISuggestions> {
  return parseSuggestions(await request('suggestions', {}, { path }));
}

/** Accept or reject a suggestion: the given cells, or all its pending ones. */
export async function decideSuggestion(
  id: string,
  decision: 'accept' | 'reject',
  cells?: string[]
): Promise<ISuggestion | null> {
  const body = await post(
    `suggestions/${encodeURIComponent(id)}/${decision}`,
    cells ? { cells } : {}
  );
  return parseSuggestion(body);
}

/** Say whether agents using this person's identity propose their edits for review. */
export function setReview(enabled: boolean): Promise<unknown> {
  return request('review', {
    method: 'PUT',
    body: JSON.stringify({ enabled })
  });
}

/** This person's grants (api/mcp/grants; a 404 without a message: a server without grants). */
export async function fetchGrants(): Promise<IGrant[]> {
  return parseGrants(await request('grants'));
}

/** Revoke a grant: its tokens stop working, its sessions and runs end. */
export function revokeGrant(id: string): Promise<unknown> {
  return request(`grants/${encodeURIComponent(id)}`, { method: 'DELETE' });
}

/** Mint a headless grant: its token comes back this once. */
export async function mintGrant(choice: IMintRequest): Promise<IMinted> {
  const minted = parseMinted(
    await post('grants', choice as unknown as Record<string, unknown>)
  );
  if (!minted) {
    throw new ApiError(
      trans.__('the server answered without a token'),
      0,
      false
    );
  }
  return minted;
}
