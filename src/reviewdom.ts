/**
 * The DOM of a suggestion under review: one block per suggested cell change (or per text change), with the
 * agent's name, the summary, a line diff against the live text and the Accept / Reject buttons. Built from
 * plain data and callbacks, so jest checks the classes and attributes the browser tests select on.
 */
import { IDiffLine, diffStats, lineDiff } from './diff';
import { trans } from './i18n';
import { ISuggestedCell, ISuggestion } from './suggestions';

/** Classes the browser tests select on. */
export const SUGGESTION = 'jp-mcp-suggestion';
export const SUGGESTIONS = 'jp-mcp-suggestions';
export const SUGGESTED_DELETE = 'jp-mcp-suggested-delete';
export const SUGGESTED_CELL = 'jp-mcp-suggested-cell';

/** Most diff lines a block draws (the rest is counted). */
export const MAX_DIFF_LINES = 400;

/** What the buttons do: the cell ids to decide, or null for every pending change of the suggestion. */
export type Decide = (
  suggestion: ISuggestion,
  decision: 'accept' | 'reject',
  cells: string[] | null
) => void;

/**
 * The diff a block shows: the live text against the proposal; when the text changed since the agent
 * proposed (the person kept typing), the agent's own change (its `before` against the proposal), since an
 * accept merges that change into what is there now rather than replacing it.
 */
export function shownDiff(
  live: string | null,
  before: string | null,
  after: string | null,
  cut = false
): { lines: IDiffLine[]; stale: boolean } {
  if (cut) {
    // Only part of the texts is listed: the listed parts against each other, never the whole live text.
    return { lines: lineDiff(before ?? '', after ?? ''), stale: false };
  }
  const base = live ?? before ?? '';
  const stale = live !== null && before !== null && live !== before;
  return {
    lines: lineDiff(stale ? before : base, after ?? ''),
    stale
  };
}

/** The lines of `before` a line diff changes: [start, end) ranges; an insertion is the empty [i, i). */
function changedLines(lines: IDiffLine[]): [number, number][] {
  const ranges: [number, number][] = [];
  let index = 0;
  for (const line of lines) {
    const last = ranges[ranges.length - 1];
    if (line.kind === 'same') {
      index++;
      continue;
    }
    const end = line.kind === 'del' ? index + 1 : index;
    if (last && last[1] >= index) {
      last[1] = Math.max(last[1], end);
    } else {
      ranges.push([index, end]);
    }
    if (line.kind === 'del') {
      index++;
    }
  }
  return ranges;
}

/**
 * Whether Accept can only conflict: people changed the cell since the agent proposed (`live` differs from
 * `before`) on the lines the agent's change touches. The server refuses such an
 * accept (it never overwrites what people changed), so the block must not promise a merge. Line by line: the
 * server merges by character, so a change it can still apply may be called a conflict here, never the reverse.
 */
export function acceptConflicts(
  live: string | null,
  before: string | null,
  after: string | null
): boolean {
  if (live === null || before === null || after === null || live === before) {
    return false;
  }
  const agent = changedLines(lineDiff(before, after));
  const people = changedLines(lineDiff(before, live));
  // Ranges overlap; an insertion conflicts with a change on either side of it.
  const meet = (x0: number, x1: number, y0: number, y1: number) =>
    (x0 < y1 && y0 < x1) || (x0 === x1 && y0 <= x0 && x0 <= y1);
  return agent.some(([a0, a1]) =>
    people.some(([p0, p1]) => meet(a0, a1, p0, p1) || meet(p0, p1, a0, a1))
  );
}

/** The note of a block whose text changed since the proposal: what Accept will do with it. */
export function staleNote(conflicts: boolean, what: 'cell' | 'file'): string {
  // Whole sentences per case: a translation may need other words around "cell" and "file".
  if (conflicts) {
    return what === 'cell'
      ? trans.__(
          'The cell changed since where this change applies: Accept will be refused as a conflict (what people typed is never overwritten). Reject it, or ask the agent to propose again.'
        )
      : trans.__(
          'The file changed since where this change applies: Accept will be refused as a conflict (what people typed is never overwritten). Reject it, or ask the agent to propose again.'
        );
  }
  return what === 'cell'
    ? trans.__(
        'The cell changed since: this is the agent’s change, which Accept merges into what is there now.'
      )
    : trans.__(
        'The file changed since: this is the agent’s change, which Accept merges into what is there now.'
      );
}

/** The diff as one row per line (insertions `.jp-mcp-diff-add`, deletions `.jp-mcp-diff-del`). */
export function diffNode(lines: IDiffLine[]): HTMLElement {
  const pre = document.createElement('pre');
  pre.className = 'jp-mcp-suggestion-diff';
  const shown = lines.slice(0, MAX_DIFF_LINES);
  for (const line of shown) {
    const row = document.createElement('div');
    row.className = `jp-mcp-diff-line jp-mcp-diff-${line.kind}`;
    // The +/− marks come from CSS: the row's text is the line itself (copied or tested as it is).
    row.textContent = line.text;
    pre.appendChild(row);
  }
  if (lines.length > shown.length) {
    const more = document.createElement('div');
    more.className = 'jp-mcp-diff-more';
    more.textContent = trans._n(
      '… %1 more line',
      '… %1 more lines',
      lines.length - shown.length
    );
    pre.appendChild(more);
  }
  if (!lines.length) {
    const empty = document.createElement('div');
    empty.className = 'jp-mcp-diff-empty';
    empty.textContent = trans.__('(empty)');
    pre.appendChild(empty);
  }
  return pre;
}

function button(
  className: string,
  label: string,
  title: string,
  onClick: () => void
): HTMLButtonElement {
  const node = document.createElement('button');
  node.type = 'button';
  node.className = `jp-mcp-suggestion-button ${className}`;
  node.textContent = label;
  node.title = title;
  node.addEventListener('click', () => {
    // One click, one request: the block is redrawn from the server's answer.
    node.closest(`.${SUGGESTION}`)?.classList.add('jp-mcp-suggestion-busy');
    for (const other of Array.from(
      node.parentElement?.querySelectorAll('button') ?? []
    )) {
      other.disabled = true;
    }
    onClick();
  });
  return node;
}

function head(suggestion: ISuggestion, what: string): HTMLElement {
  const node = document.createElement('div');
  node.className = 'jp-mcp-suggestion-head';
  const agent = document.createElement('span');
  agent.className = 'jp-mcp-suggestion-agent';
  agent.textContent = suggestion.agentName;
  agent.title = suggestion.client
    ? trans.__('%1 (client: %2)', suggestion.agentName, suggestion.client)
    : suggestion.agentName;
  const kind = document.createElement('span');
  kind.className = 'jp-mcp-suggestion-kind';
  kind.textContent = what;
  node.append(agent, kind);
  if (suggestion.summary) {
    const summary = document.createElement('span');
    summary.className = 'jp-mcp-suggestion-summary';
    summary.textContent = suggestion.summary;
    node.appendChild(summary);
  }
  return node;
}

function describeChange(
  cell: ISuggestedCell,
  first: boolean,
  liveType: string | null
): string {
  const type = cell.cellType && cell.cellType !== 'code' ? cell.cellType : '';
  switch (cell.change) {
    case 'insert':
      if (type) {
        return first
          ? trans.__('suggests a new first %1 cell', type)
          : trans.__('suggests a new %1 cell after this one', type);
      }
      return first
        ? trans.__('suggests a new first cell')
        : trans.__('suggests a new cell after this one');
    case 'delete':
      return trans.__('suggests deleting this cell');
    default:
      return liveType && cell.cellType && cell.cellType !== liveType
        ? trans.__('suggests a change, as a %1 cell', cell.cellType)
        : trans.__('suggests a change');
  }
}

function note(node: HTMLElement, text: string): void {
  const div = document.createElement('div');
  div.className = 'jp-mcp-suggestion-note';
  div.textContent = text;
  node.appendChild(div);
}

/** A function, not a constant: the translator is set at activation, after this module is loaded. */
function cutNote(): string {
  return trans.__(
    'Shown in part (the change is long): Accept applies all of it.'
  );
}

/** A block's accessible name: the agent, then what it suggests (`%1 %2`, so a translation may reorder). */
function blockLabel(suggestion: ISuggestion, what: string): string {
  return trans.__('%1 %2', suggestion.agentName, what);
}

/**
 * The block of one cell change. `live` is the live cell's text (null for a new cell); `first` says a new
 * cell would come before every live cell (it then shows on the first one).
 */
export function cellBlock(
  suggestion: ISuggestion,
  cell: ISuggestedCell,
  live: string | null,
  decide: Decide,
  first = false,
  liveType: string | null = null
): HTMLElement {
  const node = document.createElement('div');
  node.className = `${SUGGESTION} jp-mcp-suggestion-${cell.change}`;
  if (cell.change === 'insert') {
    node.classList.add('jp-mcp-ghost-cell');
  }
  node.dataset.mcpSuggestionId = suggestion.id;
  node.dataset.cellId = cell.cellId;
  node.dataset.mcpChange = cell.change;
  node.dataset.mcpState = cell.state;
  if (cell.state === 'conflict') {
    node.classList.add('jp-mcp-suggestion-conflict');
  }
  if (suggestion.agentKey) {
    node.dataset.mcpAgentKey = suggestion.agentKey;
  }
  node.setAttribute('role', 'group');
  const what = describeChange(cell, first, liveType);
  node.setAttribute('aria-label', blockLabel(suggestion, what));
  node.appendChild(head(suggestion, what));
  const { lines, stale } = shownDiff(
    cell.change === 'insert' ? null : live,
    cell.before,
    cell.after,
    cell.cut
  );
  const stats = diffStats(lines);
  node.dataset.mcpAdded = String(stats.added);
  node.dataset.mcpRemoved = String(stats.removed);
  node.appendChild(diffNode(lines));
  if (stale) {
    const shownLive = cell.change === 'insert' ? null : live;
    note(
      node,
      staleNote(acceptConflicts(shownLive, cell.before, cell.after), 'cell')
    );
  }
  if (cell.cut) {
    note(node, cutNote());
  }
  if (cell.reason) {
    note(node, cell.reason);
  }
  const pendingCells = suggestion.cells.filter(c => c.state === 'pending');
  const actions = document.createElement('div');
  actions.className = 'jp-mcp-suggestion-actions';
  if (cell.state === 'pending') {
    actions.append(
      button(
        'jp-mcp-suggestion-accept',
        trans.__('Accept'),
        trans.__('Apply this change to the cell'),
        () => decide(suggestion, 'accept', [cell.cellId])
      )
    );
  }
  actions.append(
    button(
      'jp-mcp-suggestion-reject',
      trans.__('Reject'),
      trans.__('Discard this change'),
      () => decide(suggestion, 'reject', [cell.cellId])
    )
  );
  if (pendingCells.length) {
    // Not when nothing is pending (every cell left conflicts): the server could only refuse it.
    actions.append(
      button(
        'jp-mcp-suggestion-accept-all',
        trans.__('Accept all'),
        trans._n(
          'Apply the %1 pending change of this suggestion',
          'Apply all %1 pending changes of this suggestion',
          pendingCells.length
        ),
        () => decide(suggestion, 'accept', null)
      )
    );
  }
  actions.append(
    button(
      'jp-mcp-suggestion-reject-all',
      trans.__('Reject all'),
      trans._n(
        'Discard the %1 pending change of this suggestion',
        'Discard all %1 pending changes of this suggestion',
        pendingCells.length
      ),
      () => decide(suggestion, 'reject', null)
    )
  );
  node.appendChild(actions);
  return node;
}

/** The block of a text document's suggestion (one change: Accept and Reject decide all of it). */
export function textBlock(
  suggestion: ISuggestion,
  live: string | null,
  decide: Decide
): HTMLElement {
  const node = document.createElement('div');
  node.className = `${SUGGESTION} jp-mcp-suggestion-text`;
  node.dataset.mcpSuggestionId = suggestion.id;
  if (suggestion.agentKey) {
    node.dataset.mcpAgentKey = suggestion.agentKey;
  }
  node.setAttribute('role', 'group');
  node.setAttribute(
    'aria-label',
    trans.__('%1 suggests a change of this file', suggestion.agentName)
  );
  node.appendChild(head(suggestion, trans.__('suggests a change')));
  const text = suggestion.text ?? { before: '', after: '', cut: false };
  const { lines, stale } = shownDiff(live, text.before, text.after, text.cut);
  node.appendChild(diffNode(lines));
  if (stale) {
    note(
      node,
      staleNote(acceptConflicts(live, text.before, text.after), 'file')
    );
  }
  if (text.cut) {
    note(node, cutNote());
  }
  const actions = document.createElement('div');
  actions.className = 'jp-mcp-suggestion-actions';
  actions.append(
    button(
      'jp-mcp-suggestion-accept',
      trans.__('Accept'),
      trans.__('Apply this change to the file'),
      () => decide(suggestion, 'accept', null)
    ),
    button(
      'jp-mcp-suggestion-reject',
      trans.__('Reject'),
      trans.__('Discard this change'),
      () => decide(suggestion, 'reject', null)
    )
  );
  node.appendChild(actions);
  return node;
}

/**
 * A suggestion's changes that have no cell to show on (the cell was deleted since, or the notebook has no
 * cell to show a new one after): listed above the notebook with Accept all / Reject all.
 */
export function orphanBlock(
  suggestion: ISuggestion,
  cells: ISuggestedCell[],
  decide: Decide
): HTMLElement {
  const node = document.createElement('div');
  node.className = `${SUGGESTION} jp-mcp-suggestion-orphan`;
  node.dataset.mcpSuggestionId = suggestion.id;
  if (suggestion.agentKey) {
    node.dataset.mcpAgentKey = suggestion.agentKey;
  }
  node.setAttribute('role', 'group');
  const what = trans._n(
    'suggests a change of a cell not shown here',
    'suggests %1 changes of cells not shown here',
    cells.length
  );
  node.setAttribute('aria-label', blockLabel(suggestion, what));
  node.appendChild(head(suggestion, what));
  for (const cell of cells) {
    node.appendChild(
      diffNode(
        shownDiff(null, cell.before, cell.change === 'delete' ? '' : cell.after)
          .lines
      )
    );
  }
  const actions = document.createElement('div');
  actions.className = 'jp-mcp-suggestion-actions';
  actions.append(
    button(
      'jp-mcp-suggestion-accept-all',
      trans.__('Accept all'),
      trans.__('Apply all pending changes of this suggestion'),
      () => decide(suggestion, 'accept', null)
    ),
    button(
      'jp-mcp-suggestion-reject-all',
      trans.__('Reject all'),
      trans.__('Discard all pending changes of this suggestion'),
      () => decide(suggestion, 'reject', null)
    )
  );
  node.appendChild(actions);
  return node;
}
