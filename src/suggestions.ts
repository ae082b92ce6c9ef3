/**
 * Pure parsing of the review API's answers (api/mcp/suggestions, api/mcp/review) and where a notebook
 * shows each suggested cell change. Read field by field with defaults, like rest.ts: a server of another
 * version gives fewer suggestions, never a broken notebook.
 */
import { trans } from './i18n';

/** States of a suggestion, and of each of its cell changes. */
export type SuggestionState =
  'pending' | 'accepted' | 'rejected' | 'expired' | 'conflict';

/** What a suggestion does to one cell. */
export type CellChangeKind = 'insert' | 'update' | 'delete';

/** One cell change of a suggestion. */
export interface ISuggestedCell {
  cellId: string;
  /** Where the cell is (update, delete) or would be (insert) in the suggested notebook, when known. */
  index: number | null;
  change: CellChangeKind;
  /** The cell's text when the agent proposed the change (null: a new cell). */
  before: string | null;
  /** The text it proposes (null: the cell is deleted). */
  after: string | null;
  state: SuggestionState;
  reason: string;
  /** The cell's type in the suggestion ("code", "markdown", "raw"; "" when not said). */
  cellType: string;
  /** The cell a new cell follows in the suggested notebook ("": the first; null: not said). */
  afterCell: string | null;
  /** `before` and `after` are shown in part (the server bounds what it lists; Accept applies all). */
  cut: boolean;
}

/** A suggestion as the API lists it. */
export interface ISuggestion {
  id: string;
  state: SuggestionState;
  agentKey: string | null;
  agentName: string;
  client: string | null;
  summary: string;
  created: string;
  expires: string;
  cells: ISuggestedCell[];
  /** A text document's change. */
  text: { before: string; after: string; cut: boolean } | null;
}

/** The suggestions answer. */
export interface ISuggestions {
  path: string;
  suggestions: ISuggestion[];
}

const STATES: SuggestionState[] = [
  'pending',
  'accepted',
  'rejected',
  'expired',
  'conflict'
];
const CHANGES: CellChangeKind[] = ['insert', 'update', 'delete'];
/** A suggestion id goes into a URL path and a CSS attribute selector: only these characters. */
const ID = /^[\w.:-]{1,200}$/;

function str(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

function textOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function int(value: unknown): number | null {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0
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

function state(value: unknown, fallback: SuggestionState): SuggestionState {
  return STATES.includes(value as SuggestionState)
    ? (value as SuggestionState)
    : fallback;
}

function parseCell(raw: unknown): ISuggestedCell | null {
  const cell = obj(raw);
  const cellId = str(cell.cell_id);
  const change = cell.change as CellChangeKind;
  if (!cellId || !CHANGES.includes(change)) {
    return null;
  }
  return {
    cellId,
    index: int(cell.index),
    change,
    before: change === 'insert' ? null : textOrNull(cell.before),
    after: change === 'delete' ? null : (textOrNull(cell.after) ?? ''),
    state: state(cell.state, 'pending'),
    reason: str(cell.reason) ?? '',
    cellType: str(cell.cell_type) ?? '',
    afterCell: textOrNull(cell.after_cell_id ?? cell.after_cell),
    cut: cell.cut === true
  };
}

/** One suggestion of an answer (null when it lacks a usable id). */
export function parseSuggestion(raw: unknown): ISuggestion | null {
  const data = obj(raw);
  const id = str(data.id);
  if (!id || !ID.test(id)) {
    return null;
  }
  const agent = obj(data.agent);
  const seen = new Set<string>();
  const cells: ISuggestedCell[] = [];
  for (const rawCell of list(data.cells)) {
    const cell = parseCell(rawCell);
    if (cell && !seen.has(cell.cellId)) {
      seen.add(cell.cellId);
      cells.push(cell);
    }
  }
  const text = obj(data.text);
  const hasText =
    typeof text.before === 'string' && typeof text.after === 'string';
  return {
    id,
    state: state(data.state, 'pending'),
    agentKey: str(agent.key),
    agentName: str(agent.name) ?? str(agent.key) ?? trans.__('an agent'),
    client: str(agent.client),
    summary: str(data.summary) ?? '',
    created: str(data.created) ?? '',
    expires: str(data.expires) ?? '',
    cells,
    text: hasText
      ? {
          before: text.before as string,
          after: text.after as string,
          cut: text.cut === true
        }
      : null
  };
}

/** The suggestions answer, without duplicate ids. */
export function parseSuggestions(body: unknown): ISuggestions {
  const data = obj(body);
  const seen = new Set<string>();
  const suggestions: ISuggestion[] = [];
  for (const raw of list(data.suggestions)) {
    const suggestion = parseSuggestion(raw);
    if (suggestion && !seen.has(suggestion.id)) {
      seen.add(suggestion.id);
      suggestions.push(suggestion);
    }
  }
  return { path: str(data.path) ?? '', suggestions };
}

/** A cell change the person still has to see: pending, or in conflict (shown with why, to reject it). */
function open(cell: ISuggestedCell): boolean {
  return cell.state === 'pending' || cell.state === 'conflict';
}

/**
 * The suggestions still waiting for the person (the ones the notebook shows), with their pending cell
 * changes and those in conflict (an accept of another suggestion changed the same text).
 */
export function pending(suggestions: ISuggestion[]): ISuggestion[] {
  return (
    suggestions
      // A suggestion in conflict is still undecided (a cell waits for Reject): shown, as docs/review.md says.
      .filter(s => s.state === 'pending' || s.state === 'conflict')
      .map(s => ({ ...s, cells: s.cells.filter(open) }))
      .filter(s => s.cells.length > 0 || s.text !== null)
  );
}

/** A cell change as the notebook shows it: on which live cell. */
export interface IPlacement {
  suggestion: ISuggestion;
  cell: ISuggestedCell;
  /**
   * The live cell it shows on: the changed cell (update, delete), or for a new cell the live cell it would
   * follow (null: it would be the first cell; it then shows on the first live cell).
   */
  anchor: string | null;
}

/**
 * Where each pending cell change shows. An update or delete shows on its cell (skipped when the cell is
 * gone). An insert's `index` is its position in the suggested notebook: the live cells the suggestion keeps
 * fill the positions its new cells leave free, so a new cell follows the kept cell just before it there.
 */
export function placements(
  liveIds: string[],
  suggestions: ISuggestion[]
): IPlacement[] {
  const live = new Set(liveIds);
  const out: IPlacement[] = [];
  for (const suggestion of suggestions) {
    const deleted = new Set(
      suggestion.cells
        .filter(c => c.change === 'delete' && c.state !== 'rejected')
        .map(c => c.cellId)
    );
    const kept = liveIds.filter(id => !deleted.has(id));
    const inserts = suggestion.cells
      .filter(c => c.change === 'insert')
      .sort(
        (x, y) =>
          (x.index ?? Number.MAX_SAFE_INTEGER) -
          (y.index ?? Number.MAX_SAFE_INTEGER)
      );
    // Walk the suggested notebook: position p holds the next insert if its index is p, else the next kept cell.
    let keptSeen = 0;
    let position = 0;
    const anchorOf = new Map<string, string | null>();
    for (const insert of inserts) {
      const target = insert.index ?? Number.MAX_SAFE_INTEGER;
      while (position < target && keptSeen < kept.length) {
        keptSeen++;
        position++;
      }
      anchorOf.set(insert.cellId, keptSeen > 0 ? kept[keptSeen - 1] : null);
      position++;
    }
    // A server that names the cell a new one follows is believed over the positions: through the new cells
    // of the same suggestion, to the live cell (or the top) the run of new cells follows.
    for (const insert of inserts) {
      const after = insert.afterCell;
      if (after === '') {
        anchorOf.set(insert.cellId, null);
      } else if (after !== null && live.has(after)) {
        anchorOf.set(insert.cellId, after);
      } else if (after !== null && anchorOf.has(after)) {
        anchorOf.set(insert.cellId, anchorOf.get(after) ?? null);
      }
    }
    for (const cell of suggestion.cells) {
      if (!open(cell)) {
        continue;
      }
      if (cell.change === 'insert') {
        out.push({
          suggestion,
          cell,
          anchor: anchorOf.get(cell.cellId) ?? null
        });
      } else if (live.has(cell.cellId)) {
        out.push({ suggestion, cell, anchor: cell.cellId });
      }
    }
  }
  return out;
}

/** The review switch's answer: this person's setting and the server's review_mode. */
export interface IReviewStatus {
  enabled: boolean;
  server: boolean;
}

export function parseReview(body: unknown): IReviewStatus {
  const data = obj(body);
  return { enabled: data.enabled === true, server: data.server === true };
}
