/**
 * Pure parsing of the server's REST answers (api/mcp/activity and api/mcp/agents).
 *
 * The answers are read field by field with defaults, so a server of another version (or one without these
 * handlers yet) gives an empty panel, never a broken one.
 */
import { trans } from './i18n';

/** A cell an activity entry touched. */
export interface IActivityCell {
  cellId: string;
  index: number | null;
}

/** One line of the activity timeline. */
export interface IActivityEntry {
  seq: number;
  time: string;
  kind: string;
  agentKey: string | null;
  agentName: string;
  client: string | null;
  summary: string;
  cells: IActivityCell[];
  /** The history version holding the edit (a version id: the server sends a string). */
  version: string | null;
  /** The version before the edit: restoring it undoes the edit. */
  beforeVersion: string | null;
  by: string | null;
}

/** The activity answer. */
export interface IActivity {
  entries: IActivityEntry[];
  latest: number | null;
  /** More entries follow `latest`: ask again right away. */
  more: boolean;
  /** The seqs of the entries the next undos take back, as of this answer (null: a server that does not say). */
  undoable: number[] | null;
}

/** An agent as api/mcp/agents lists it. */
export interface IAgentStatus {
  key: string;
  name: string;
  client: string | null;
  stopped: boolean;
}

/** The agents answer. */
export interface IAgents {
  agents: IAgentStatus[];
  canStop: boolean;
}

function str(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function int(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) ? value : null;
}

/** A version id: the server sends strings; a number is accepted too. */
function versionId(value: unknown): string | null {
  if (typeof value === 'number' && Number.isInteger(value)) {
    return String(value);
  }
  return typeof value === 'string' && /^[\w.:-]{1,100}$/.test(value)
    ? value
    : null;
}

function obj(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Entries of an activity answer, oldest first, without duplicates or entries lacking a sequence number. */
export function parseActivity(body: unknown): IActivity {
  const data = obj(body);
  const seen = new Set<number>();
  const entries: IActivityEntry[] = [];
  for (const raw of list(data.entries)) {
    const entry = obj(raw);
    const seq = int(entry.seq);
    if (seq === null || seen.has(seq)) {
      continue;
    }
    seen.add(seq);
    const agent = obj(entry.agent);
    const cells: IActivityCell[] = [];
    for (const rawCell of list(entry.cells)) {
      const cell = obj(rawCell);
      const cellId = str(cell.cell_id);
      if (cellId) {
        cells.push({ cellId, index: int(cell.index) });
      }
    }
    entries.push({
      seq,
      time: str(entry.time) ?? '',
      kind: str(entry.kind) ?? 'edit',
      agentKey: str(agent.key),
      agentName:
        str(agent.name) ??
        str(agent.key) ??
        str(entry.by) ??
        trans.__('an agent'),
      client: str(agent.client),
      summary: str(entry.summary) ?? '',
      cells,
      version: versionId(entry.version),
      beforeVersion: versionId(entry.before_version),
      by: str(entry.by)
    });
  }
  entries.sort((a, b) => a.seq - b.seq);
  const latest =
    int(data.latest) ??
    (entries.length ? entries[entries.length - 1].seq : null);
  const undoable = Array.isArray(data.undoable)
    ? data.undoable.map(int).filter((seq): seq is number => seq !== null)
    : null;
  return { entries, latest, more: data.more === true, undoable };
}

/** Merge newer entries into a timeline, keeping at most `limit` (the newest). */
export function mergeActivity(
  old: IActivityEntry[],
  newer: IActivityEntry[],
  limit = 500
): IActivityEntry[] {
  const bySeq = new Map<number, IActivityEntry>();
  for (const entry of [...old, ...newer]) {
    bySeq.set(entry.seq, entry);
  }
  const merged = Array.from(bySeq.values()).sort((a, b) => a.seq - b.seq);
  return merged.slice(Math.max(0, merged.length - limit));
}

/** The agents answer; `canStop` is false unless the server says true. */
export function parseAgents(body: unknown): IAgents {
  const data = obj(body);
  const agents: IAgentStatus[] = [];
  for (const raw of list(data.agents)) {
    const agent = obj(raw);
    const key = str(agent.key);
    if (key) {
      agents.push({
        key,
        name: str(agent.name) ?? key,
        client: str(agent.client),
        stopped: agent.stopped === true
      });
    }
  }
  return { agents, canStop: data.can_stop === true };
}

/** A short local time for an ISO 8601 timestamp ("" when it cannot be read). */
export function shortTime(iso: string): string {
  const date = new Date(iso);
  if (!iso || isNaN(date.getTime())) {
    return '';
  }
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** The label of a cell reference ("cell 3" by its index when known, else a short id). */
export function cellLabel(cell: IActivityCell): string {
  return cell.index !== null
    ? `cell ${cell.index}`
    : `cell ${cell.cellId.slice(0, 8)}`;
}

/**
 * The entries that get an undo button: the edit (or a person's restore) each undo stack takes back next, as
 * the server says; from an older server, each agent's newest edit (the undo endpoint undoes an agent's last
 * edit, so a button on an older entry would undo something else than the entry it sits on).
 */
export function lastEdits(
  entries: IActivityEntry[],
  undoable: number[] | null = null
): Set<number> {
  if (undoable !== null) {
    // The server knows each undo stack: after an undo, the button moves to the edit the next undo takes back.
    return new Set(undoable);
  }
  const newest = new Map<string, number>();
  for (const entry of entries) {
    if (entry.kind === 'edit' && entry.agentKey) {
      newest.set(
        entry.agentKey,
        Math.max(newest.get(entry.agentKey) ?? -1, entry.seq)
      );
    }
  }
  return new Set(newest.values());
}
