/**
 * Pure logic: what the awareness states of a document say about who is in it and where its agents work.
 *
 * Kept free of JupyterLab imports (but the translator's bundle, ./i18n) so that jest tests it directly. Every field is read defensively: the
 * states come from other clients (and from servers of other versions), so a missing or odd field gives a
 * default, never an exception.
 */

import { trans } from './i18n';

/** Prefix of the awareness username of an agent; the agent's key follows it. */
export const AGENT_PREFIX = 'mcp-agent-';

/** Colour used when a state carries none or one we do not accept. */
export const DEFAULT_COLOR = 'var(--jp-brand-color1)';

/** Where an agent points (the point_at tool). */
export interface IPoint {
  cellId: string;
  message: string;
  /** Epoch milliseconds, 0 when unknown. */
  at: number;
}

/** A person or an agent in the document (one entry per person or agent, whatever its tab count). */
export interface IParticipant {
  /** The agent's key, or the person's username. */
  key: string;
  kind: 'agent' | 'person';
  username: string;
  /** Full name shown to people. */
  name: string;
  initials: string;
  color: string;
  /** The MCP client's name (agents), or null. */
  client: string | null;
  /** Awareness client ids of this participant, ascending. */
  clientIds: number[];
  /** One of the states is this browser's own. */
  isSelf: boolean;
  /** The cell the agent works in. */
  cellId: string | null;
  status: string | null;
  message: string | null;
  point: IPoint | null;
}

/** Marks to draw on a notebook's cells. */
export interface IMarks {
  /** Agents working in each cell (gutter marks). */
  working: Map<string, IParticipant[]>;
  /** Agents pointing at each cell, with their point. */
  points: Map<string, { agent: IParticipant; point: IPoint }[]>;
}

function text(value: unknown, limit = 200): string | null {
  if (typeof value !== 'string') {
    return null;
  }
  const trimmed = value.trim();
  if (!trimmed) {
    return null;
  }
  return trimmed.length > limit ? trimmed.slice(0, limit - 1) + '…' : trimmed;
}

function record(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

const COLOR =
  /^(#[0-9a-f]{3,8}|var\(--[\w-]+\)|[a-z]{3,20}|(rgb|hsl)a?\([\d\s.,%/a-z]{1,60}\))$/i;

/** A CSS colour from a state, or the default (a state's text never reaches a style unchecked). */
export function safeColor(value: unknown): string {
  const color = text(value, 80);
  return color && COLOR.test(color) ? color : DEFAULT_COLOR;
}

/** Up to two initials of a name ("Ada Lovelace" -> "AL"). */
export function initialsOf(name: string): string {
  const words = name
    .replace(/\(.*?\)/g, ' ')
    .split(/[\s._-]+/)
    .filter(word => word.length > 0);
  const letters = words.map(word => Array.from(word)[0]).slice(0, 2);
  return (letters.join('') || '?').toUpperCase();
}

function pointOf(value: unknown): IPoint | null {
  const point = record(value);
  const cellId = point ? text(point.cell_id, 100) : null;
  if (!point || !cellId) {
    return null;
  }
  const at = typeof point.at === 'number' && isFinite(point.at) ? point.at : 0;
  return { cellId, message: text(point.message, 500) ?? '', at };
}

/**
 * The people and agents in a document, from its awareness states.
 *
 * States without a `user` are skipped (a client still connecting). A state is an agent's when it has an
 * `agent` object or its username starts with the agent prefix. People are grouped by username (one person
 * may have several tabs open); agents by key. Order: agents first, then people, each by name.
 */
export function participants(
  states: Iterable<[number, unknown]>,
  selfId: number | null = null
): IParticipant[] {
  const byKey = new Map<string, IParticipant>();
  for (const [clientId, raw] of states) {
    const state = record(raw);
    const user = state ? record(state.user) : null;
    if (!state || !user) {
      continue;
    }
    const username = text(user.username, 200) ?? text(user.name, 200);
    if (!username) {
      continue;
    }
    const agent = record(state.agent);
    const isAgent = agent !== null || username.startsWith(AGENT_PREFIX);
    const key = isAgent
      ? username.startsWith(AGENT_PREFIX)
        ? username.slice(AGENT_PREFIX.length)
        : username
      : username;
    const id = `${isAgent ? 'agent' : 'person'}:${key}`;
    const name = text(user.display_name) ?? text(user.name) ?? username;
    let entry = byKey.get(id);
    if (!entry) {
      entry = {
        key,
        kind: isAgent ? 'agent' : 'person',
        username,
        name,
        initials: text(user.initials, 4) ?? initialsOf(name),
        color: safeColor(user.color),
        client: agent ? text(agent.client) : null,
        clientIds: [],
        isSelf: false,
        cellId: null,
        status: null,
        message: null,
        point: null
      };
      byKey.set(id, entry);
    }
    entry.clientIds.push(clientId);
    entry.isSelf = entry.isSelf || clientId === selfId;
    if (agent) {
      entry.cellId = text(agent.cell_id, 100) ?? entry.cellId;
      entry.status = text(agent.status) ?? entry.status;
      entry.message = text(agent.message, 500) ?? entry.message;
      const point = pointOf(agent.point);
      if (point && (!entry.point || point.at >= entry.point.at)) {
        entry.point = point;
      }
    }
  }
  const all = Array.from(byKey.values());
  for (const entry of all) {
    entry.clientIds.sort((a, b) => a - b);
  }
  return all.sort(
    (a, b) =>
      (a.kind === b.kind ? 0 : a.kind === 'agent' ? -1 : 1) ||
      a.name.localeCompare(b.name) ||
      a.key.localeCompare(b.key)
  );
}

/**
 * A name as people chose it, isolated for use inside a sentence in an attribute (title, aria-label): first
 * strong isolate ... pop directional isolate, so right-to-left text or overrides in it cannot reorder the
 * words around it. Elements use <bdi> instead.
 */
export function isolated(name: string): string {
  return `\u2068${name}\u2069`;
}

/** The accessible description of a participant: full name, what it is, and its client. */
export function describe(participant: IParticipant): string {
  // Names and clients as people chose them: isolated, so right-to-left overrides cannot reorder the rest.
  const parts = [isolated(participant.name)];
  if (participant.kind === 'agent') {
    // The server's display name already says "(AI agent)": say it once.
    const said = /\(AI agent\)\s*$/.test(participant.name);
    const client = participant.client
      ? trans.__('client: %1', isolated(participant.client))
      : '';
    parts.push(
      said
        ? client
        : client
          ? trans.__('AI agent (%1)', client)
          : trans.__('AI agent')
    );
    if (participant.status) {
      parts.push(participant.status);
    }
    if (participant.message) {
      parts.push(participant.message);
    }
  } else {
    // Anonymous users' usernames are random hex: they tell a person nothing.
    const username = /^[0-9a-f]{32}$/i.test(participant.username)
      ? null
      : participant.username;
    const who = [username, participant.isSelf ? trans.__('you') : null]
      .filter(Boolean)
      .join(', ');
    if (who) {
      parts.push(who);
    }
    if (participant.clientIds.length > 1) {
      parts.push(
        trans._n('%1 window', '%1 windows', participant.clientIds.length)
      );
    }
  }
  return parts.filter(Boolean).join(' · ');
}

/**
 * The cells to mark: where each agent works, and where each points (unless that point was dismissed:
 * `dismissed` maps an agent's key to the `at` of the point the person closed).
 */
export function marks(
  people: IParticipant[],
  dismissed: ReadonlyMap<string, number> = new Map()
): IMarks {
  const working = new Map<string, IParticipant[]>();
  const points = new Map<string, { agent: IParticipant; point: IPoint }[]>();
  for (const agent of people) {
    if (agent.kind !== 'agent') {
      continue;
    }
    if (agent.cellId) {
      working.set(agent.cellId, [...(working.get(agent.cellId) ?? []), agent]);
    }
    const point = agent.point;
    if (point && dismissed.get(agent.key) !== point.at) {
      points.set(point.cellId, [
        ...(points.get(point.cellId) ?? []),
        { agent, point }
      ]);
    }
  }
  return { working, points };
}

/**
 * The cell a follower should now show: the followed agent's cell when it changed since `last`, else null
 * (an agent staying in its cell never pulls the view back after the person scrolled away).
 */
export function followTarget(
  people: IParticipant[],
  followed: string | null,
  last: string | null
): string | null {
  if (!followed) {
    return null;
  }
  const agent = people.find(p => p.kind === 'agent' && p.key === followed);
  const cellId = agent?.cellId ?? null;
  return cellId && cellId !== last ? cellId : null;
}

/** The server path of a document from its context path (a collaborative drive's "RTC:" prefix removed). */
export function documentPath(contextPath: string): string {
  return contextPath.replace(/^RTC:/, '');
}
