/**
 * Pure reading of api/mcp/grants answers (a person's grants, and a freshly minted headless one).
 *
 * Field by field with defaults, as rest.ts reads the activity: a server of another version gives an empty
 * list, never a broken panel. Times are the server's Unix seconds.
 */

/** A grant as the panel shows it (never a token: the server sends none). */
export interface IGrant {
  id: string;
  clientName: string;
  /** Who approved it: their name, else their username ("" when Jupyter knows neither). */
  person: string;
  level: string;
  /** [] = the whole server. */
  folders: string[];
  proposeOnly: boolean;
  headless: boolean;
  /** Its agent may open documents in this person's JupyterLab (show_in_jupyterlab). */
  mayMoveView: boolean;
  created: number;
  lastUsed: number;
  expires: number;
}

/** The answer to a mint: the grant, its token (shown once) and client configurations. */
export interface IMinted {
  grant: IGrant;
  token: string;
  url: string;
  /** The server's client configurations, in the order they are shown (key: claude, mcp_remote, http_json). */
  commands: { key: string; text: string }[];
}

/** What the person chose in the mint form. */
export interface IMintRequest {
  name: string;
  level: string;
  folders: string[];
  expires: number;
  propose_only: boolean;
}

/** Expiry choices of the mint form, in days (the server accepts 1 hour to 366 days). */
export const MINT_EXPIRY_DAYS = [1, 7, 30, 90, 365];

/** The command lines the server sends, in the order they are shown. */
const COMMANDS = ['claude', 'mcp_remote', 'http_json'];

function obj(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function seconds(value: unknown): number {
  return typeof value === 'number' && isFinite(value) ? value : 0;
}

/** One grant of an answer, or null when it has no id. */
export function parseGrant(raw: unknown): IGrant | null {
  const data = obj(raw);
  const id = text(data.id);
  if (!/^[0-9a-f]{1,64}$/.test(id)) {
    return null;
  }
  const folders = (Array.isArray(data.folders) ? data.folders : []).filter(
    (f): f is string => typeof f === 'string'
  );
  return {
    id,
    clientName: text(data.client_name) || 'MCP client',
    // granted_by: the server's name for the person (newer servers); else their name, else their username.
    person:
      text(data.granted_by) || text(data.person_name) || text(data.person),
    level: text(data.level) || 'read',
    folders: folders.includes('') ? [] : folders,
    proposeOnly: data.propose_only === true,
    headless: data.headless === true,
    mayMoveView: data.may_move_view === true,
    created: seconds(data.created),
    lastUsed: seconds(data.last_used),
    expires: seconds(data.expires)
  };
}

/** The grants of a list answer, newest first. */
export function parseGrants(body: unknown): IGrant[] {
  const raw = obj(body).grants;
  return (Array.isArray(raw) ? raw : [])
    .map(parseGrant)
    .filter((g): g is IGrant => g !== null)
    .sort((a, b) => b.created - a.created);
}

/** A mint's answer, or null when it carries no grant or token. */
export function parseMinted(body: unknown): IMinted | null {
  const data = obj(body);
  const grant = parseGrant(data.grant);
  const token = text(data.token);
  if (!grant || !token) {
    return null;
  }
  const commands = obj(data.commands);
  return {
    grant,
    token,
    url: text(data.url),
    commands: COMMANDS.filter(key => text(commands[key])).map(key => ({
      key,
      text: text(commands[key])
    }))
  };
}

/** The folders of the form's text area (one per line, blanks dropped): [] = the whole server. */
export function foldersOf(lines: string): string[] {
  return lines
    .split('\n')
    .map(line => line.trim())
    .filter(line => line.length > 0);
}

/** A local date and time for Unix seconds ("" for 0: never). */
export function when(stamp: number): string {
  if (!stamp) {
    return '';
  }
  const date = new Date(stamp * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
}
