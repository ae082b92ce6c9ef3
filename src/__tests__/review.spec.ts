/**
 * Review of suggestions: the line diff, the parsing of the review API's answers, where a notebook shows
 * each change, and the DOM (classes, attributes, buttons) the browser tests select on.
 */
import { DIFF_CELLS, diffStats, lineDiff, splitLines } from '../diff';
import {
  acceptConflicts,
  cellBlock,
  diffNode,
  MAX_DIFF_LINES,
  shownDiff,
  textBlock
} from '../reviewdom';
import {
  ISuggestion,
  parseReview,
  parseSuggestion,
  parseSuggestions,
  pending,
  placements
} from '../suggestions';

function kinds(before: string, after: string): string[] {
  return lineDiff(before, after).map(
    l => `${{ same: ' ', add: '+', del: '-' }[l.kind]}${l.text}`
  );
}

describe('lineDiff', () => {
  it('splits lines without a phantom last line', () => {
    expect(splitLines('')).toEqual([]);
    expect(splitLines('a\nb\n')).toEqual(['a', 'b']);
    expect(splitLines('a\n\nb')).toEqual(['a', '', 'b']);
  });

  it('keeps common lines and marks removed and added ones', () => {
    expect(kinds('a\nb\nc', 'a\nB\nc')).toEqual([' a', '-b', '+B', ' c']);
    expect(kinds('', 'x\ny')).toEqual(['+x', '+y']);
    expect(kinds('x\ny', '')).toEqual(['-x', '-y']);
    expect(kinds('same', 'same')).toEqual([' same']);
    expect(kinds('a\nb\nc\nd', 'a\nc\nd\ne')).toEqual([
      ' a',
      '-b',
      ' c',
      ' d',
      '+e'
    ]);
    expect(kinds('x\na\ny\nb\nz', 'a\nq\nb')).toEqual([
      '-x',
      ' a',
      '-y',
      '+q',
      ' b',
      '-z'
    ]);
  });

  it('counts added and removed lines', () => {
    expect(diffStats(lineDiff('a\nb', 'a\nc\nd'))).toEqual({
      added: 2,
      removed: 1
    });
  });

  it('stays correct, only coarser, past its table bound', () => {
    const side = Math.ceil(Math.sqrt(DIFF_CELLS)) + 10;
    const before = Array.from({ length: side }, (_, i) => `b${i}`).join('\n');
    const after = Array.from({ length: side }, (_, i) => `a${i}`).join('\n');
    const lines = lineDiff(`head\n${before}\ntail`, `head\n${after}\ntail`);
    expect(lines).toHaveLength(2 * side + 2);
    expect(lines[0]).toEqual({ kind: 'same', text: 'head' });
    expect(lines[1]).toEqual({ kind: 'del', text: 'b0' });
    expect(lines[side + 1]).toEqual({ kind: 'add', text: 'a0' });
    expect(lines[2 * side + 1]).toEqual({ kind: 'same', text: 'tail' });
  });
});

const answer = {
  path: 'nb.ipynb',
  suggestions: [
    {
      id: 's1',
      state: 'pending',
      agent: { key: 'k1', name: 'claude-code (AI agent)', client: 'claude' },
      summary: 'Fix the import',
      created: '2026-01-01T00:00:00Z',
      expires: '2026-01-01T01:00:00Z',
      cells: [
        {
          cell_id: 'c1',
          index: 0,
          change: 'update',
          before: 'import os\n',
          after: 'import sys\n',
          state: 'pending'
        },
        {
          cell_id: 'n1',
          index: 2,
          change: 'insert',
          before: null,
          after: 'print(1)',
          state: 'pending'
        },
        {
          cell_id: 'c3',
          index: 3,
          change: 'delete',
          before: 'x',
          after: null,
          state: 'rejected'
        }
      ]
    },
    { id: 's1', state: 'pending', cells: [] },
    { id: 'bad id"]', state: 'pending' },
    { id: 's2', state: 'accepted', cells: [] },
    {
      id: 's3',
      state: 'whatever',
      agent: null,
      cells: [{ cell_id: 'c2', change: 'explode' }, 7, null],
      text: { before: 'a', after: 'b' }
    }
  ]
};

describe('parseSuggestions', () => {
  it('reads suggestions field by field, dropping duplicates and unusable ids', () => {
    const parsed = parseSuggestions(answer);
    expect(parsed.path).toBe('nb.ipynb');
    expect(parsed.suggestions.map(s => s.id)).toEqual(['s1', 's2', 's3']);
    const s1 = parsed.suggestions[0];
    expect(s1.agentName).toBe('claude-code (AI agent)');
    expect(s1.agentKey).toBe('k1');
    expect(s1.summary).toBe('Fix the import');
    expect(s1.cells.map(c => [c.cellId, c.change, c.state])).toEqual([
      ['c1', 'update', 'pending'],
      ['n1', 'insert', 'pending'],
      ['c3', 'delete', 'rejected']
    ]);
    expect(s1.cells[1].before).toBeNull();
    expect(s1.cells[2].after).toBeNull();
    const s3 = parsed.suggestions[2];
    expect(s3.state).toBe('pending');
    expect(s3.agentName).toBe('an agent');
    expect(s3.cells).toEqual([]);
    expect(s3.text).toEqual({ before: 'a', after: 'b', cut: false });
  });

  it('gives nothing for answers that are not the API’s', () => {
    expect(parseSuggestions(null)).toEqual({ path: '', suggestions: [] });
    expect(parseSuggestions({ suggestions: 'x' }).suggestions).toEqual([]);
    expect(parseSuggestion({ id: '' })).toBeNull();
  });

  it('keeps only pending suggestions and their pending cells (and those in conflict)', () => {
    const shown = pending(parseSuggestions(answer).suggestions);
    expect(shown.map(s => s.id)).toEqual(['s1', 's3']);
    expect(shown[0].cells.map(c => c.cellId)).toEqual(['c1', 'n1']);
    const conflict = parseSuggestion({
      id: 'x',
      state: 'pending',
      cells: [
        { cell_id: 'a', change: 'update', after: '', state: 'pending' },
        { cell_id: 'b', change: 'update', after: '', state: 'conflict' },
        { cell_id: 'c', change: 'update', after: '', state: 'accepted' }
      ]
    })!;
    expect(pending([conflict])[0].cells.map(c => c.cellId)).toEqual(['a', 'b']);
    // Once its only undecided cell is in conflict, the suggestion is `conflict`: still shown, for Reject.
    const only = parseSuggestion({
      id: 'y',
      state: 'conflict',
      cells: [
        { cell_id: 'b', change: 'update', after: '', state: 'conflict' },
        { cell_id: 'c', change: 'update', after: '', state: 'accepted' }
      ]
    })!;
    expect(pending([only]).map(s => s.cells.map(c => c.cellId))).toEqual([
      ['b']
    ]);
  });

  it('tells an accept that merges from one that can only conflict', () => {
    const before = 'a = 1\nb = 2\nc = 3\n';
    const after = 'a = 1\nb = 20\nc = 3\n';
    // People changed another line: Accept merges.
    expect(
      acceptConflicts('a = 1\nb = 2\nc = 30\nd = 4\n', before, after)
    ).toBe(false);
    // People changed the agent's line: Accept is refused.
    expect(acceptConflicts('a = 1\nb = 99\nc = 3\n', before, after)).toBe(true);
    // Or rewrote the whole cell.
    expect(acceptConflicts('something else\n', before, after)).toBe(true);
    expect(acceptConflicts(before, before, after)).toBe(false);
  });

  it('reads the server’s cell type, the cell a new one follows, and a cut', () => {
    const s = parseSuggestion({
      id: 'x',
      cells: [
        {
          cell_id: 'n',
          change: 'insert',
          index: 1,
          cell_type: 'markdown',
          after: '# t',
          after_cell_id: 'a',
          cut: true
        }
      ],
      text: { before: 'a', after: 'b', cut: true }
    })!;
    expect(s.cells[0]).toMatchObject({
      cellType: 'markdown',
      afterCell: 'a',
      cut: true
    });
    expect(s.text!.cut).toBe(true);
  });

  it('reads the review switch', () => {
    expect(parseReview({ enabled: true, server: false })).toEqual({
      enabled: true,
      server: false
    });
    expect(parseReview('nope')).toEqual({ enabled: false, server: false });
  });
});

function suggestion(cells: unknown[], id = 's'): ISuggestion {
  return parseSuggestion({
    id,
    state: 'pending',
    agent: { key: 'k', name: 'Agent' },
    summary: 'sum',
    cells
  })!;
}

describe('placements', () => {
  const live = ['a', 'b', 'c'];

  it('shows updates and deletes on their cell, skipping cells that are gone', () => {
    const s = suggestion([
      { cell_id: 'b', change: 'update', before: 'x', after: 'y' },
      { cell_id: 'c', change: 'delete', before: 'z' },
      { cell_id: 'gone', change: 'update', before: 'x', after: 'y' }
    ]);
    expect(placements(live, [s]).map(p => [p.cell.cellId, p.anchor])).toEqual([
      ['b', 'b'],
      ['c', 'c']
    ]);
  });

  it('shows a new cell after the live cell it would follow', () => {
    const s = suggestion([
      { cell_id: 'n0', change: 'insert', index: 0, after: '' },
      { cell_id: 'n2', change: 'insert', index: 2, after: '' },
      { cell_id: 'n3', change: 'insert', index: 3, after: '' },
      { cell_id: 'n9', change: 'insert', index: 9, after: '' },
      { cell_id: 'nx', change: 'insert', after: '' }
    ]);
    // Suggested notebook: n0 a n2 n3 b c n9 nx
    expect(placements(live, [s]).map(p => [p.cell.cellId, p.anchor])).toEqual([
      ['n0', null],
      ['n2', 'a'],
      ['n3', 'a'],
      ['n9', 'c'],
      ['nx', 'c']
    ]);
  });

  it('believes the cell a new one follows when the server names it', () => {
    const s = suggestion([
      {
        cell_id: 'n1',
        change: 'insert',
        index: 1,
        after: '',
        after_cell_id: 'b'
      },
      {
        cell_id: 'n2',
        change: 'insert',
        index: 2,
        after: '',
        after_cell_id: 'n1'
      },
      {
        cell_id: 'n0',
        change: 'insert',
        index: 5,
        after: '',
        after_cell_id: ''
      }
    ]);
    expect(placements(live, [s]).map(p => [p.cell.cellId, p.anchor])).toEqual([
      ['n1', 'b'],
      ['n2', 'b'],
      ['n0', null]
    ]);
  });

  it('counts positions without the cells the suggestion deletes', () => {
    const s = suggestion([
      { cell_id: 'a', change: 'delete', before: '' },
      { cell_id: 'n1', change: 'insert', index: 1, after: '' }
    ]);
    // Suggested notebook: b n1 c
    expect(placements(live, [s]).map(p => [p.cell.cellId, p.anchor])).toEqual([
      ['a', 'a'],
      ['n1', 'b']
    ]);
  });
});

describe('review blocks', () => {
  const s = suggestion([
    { cell_id: 'c1', change: 'update', before: 'a\nb', after: 'a\nc' },
    { cell_id: 'n1', change: 'insert', index: 1, after: 'new' },
    { cell_id: 'd1', change: 'delete', before: 'gone' }
  ]);

  it('draws a cell change with its diff, the agent, the summary and the four buttons', () => {
    const calls: string[] = [];
    const node = cellBlock(s, s.cells[0], 'a\nb', (sg, decision, cells) =>
      calls.push(`${sg.id} ${decision} ${cells ? cells.join(',') : 'all'}`)
    );
    expect(node.matches('.jp-mcp-suggestion[data-mcp-suggestion-id="s"]')).toBe(
      true
    );
    expect(node.dataset.cellId).toBe('c1');
    expect(node.dataset.mcpChange).toBe('update');
    expect(node.querySelector('.jp-mcp-suggestion-agent')!.textContent).toBe(
      'Agent'
    );
    expect(node.querySelector('.jp-mcp-suggestion-summary')!.textContent).toBe(
      'sum'
    );
    const diff = node.querySelector('.jp-mcp-suggestion-diff')!;
    expect(diff.querySelector('.jp-mcp-diff-del')!.textContent).toBe('b');
    expect(diff.querySelector('.jp-mcp-diff-add')!.textContent).toBe('c');
    expect(diff.querySelectorAll('.jp-mcp-diff-same')).toHaveLength(1);
    const labels = Array.from(node.querySelectorAll('button')).map(
      b => b.textContent
    );
    expect(labels).toEqual(['Accept', 'Reject', 'Accept all', 'Reject all']);
    node.querySelector<HTMLButtonElement>('.jp-mcp-suggestion-accept')!.click();
    // The buttons are off until the block is redrawn from the server's answer.
    expect(
      node.querySelector<HTMLButtonElement>('.jp-mcp-suggestion-reject')!
        .disabled
    ).toBe(true);
    const again = cellBlock(s, s.cells[0], 'a\nb', (sg, decision, cells) =>
      calls.push(`${sg.id} ${decision} ${cells ? cells.join(',') : 'all'}`)
    );
    again
      .querySelector<HTMLButtonElement>('.jp-mcp-suggestion-reject-all')!
      .click();
    const third = cellBlock(s, s.cells[0], 'a\nb', (sg, decision, cells) =>
      calls.push(`${sg.id} ${decision} ${cells ? cells.join(',') : 'all'}`)
    );
    third
      .querySelector<HTMLButtonElement>('.jp-mcp-suggestion-accept-all')!
      .click();
    expect(calls).toEqual(['s accept c1', 's reject all', 's accept all']);
  });

  it('draws a new cell as a ghost of added lines and a deletion as removed lines', () => {
    const ghost = cellBlock(s, s.cells[1], null, () => undefined);
    expect(ghost.classList.contains('jp-mcp-ghost-cell')).toBe(true);
    expect(ghost.dataset.mcpChange).toBe('insert');
    expect(ghost.querySelector('.jp-mcp-diff-add')!.textContent).toBe('new');
    const first = cellBlock(s, s.cells[1], null, () => undefined, true);
    expect(first.getAttribute('aria-label')).toContain('new first cell');
    const gone = cellBlock(s, s.cells[2], 'gone', () => undefined);
    expect(gone.dataset.mcpChange).toBe('delete');
    expect(gone.querySelector('.jp-mcp-diff-del')!.textContent).toBe('gone');
    expect(gone.querySelector('.jp-mcp-diff-add')).toBeNull();
  });

  it('diffs against the live text, or shows the agent’s own change when the text moved on', () => {
    expect(shownDiff('a', 'a', 'b').stale).toBe(false);
    const moved = shownDiff('a typed', 'a', 'b');
    expect(moved.stale).toBe(true);
    expect(moved.lines.map(l => l.text)).toEqual(['a', 'b']);
    const node = cellBlock(s, s.cells[0], 'a\nb\nmore', () => undefined);
    expect(node.querySelector('.jp-mcp-suggestion-note')).not.toBeNull();
  });

  it('shows a cell in conflict with its reason and Reject only', () => {
    const c = suggestion([
      {
        cell_id: 'c1',
        change: 'update',
        before: 'a',
        after: 'b',
        state: 'conflict',
        reason: 'accepting suggestion s9 changed the same text of the cell'
      }
    ]);
    const node = cellBlock(c, c.cells[0], 'a', () => undefined);
    expect(node.dataset.mcpState).toBe('conflict');
    expect(node.classList.contains('jp-mcp-suggestion-conflict')).toBe(true);
    expect(node.querySelector('.jp-mcp-suggestion-accept')).toBeNull();
    expect(node.querySelector('.jp-mcp-suggestion-reject')).not.toBeNull();
    // nothing pending is left: no Accept all, which the server could only refuse
    expect(node.querySelector('.jp-mcp-suggestion-accept-all')).toBeNull();
    expect(node.querySelector('.jp-mcp-suggestion-reject-all')).not.toBeNull();
    expect(node.textContent).toContain('changed the same text');
  });

  it('names a new cell’s type and a retype, and diffs only the listed part of a cut text', () => {
    const t = suggestion([
      { cell_id: 'n', change: 'insert', cell_type: 'markdown', after: '# T' },
      {
        cell_id: 'c',
        change: 'update',
        cell_type: 'markdown',
        before: 'x',
        after: 'x',
        cut: true
      }
    ]);
    expect(
      cellBlock(t, t.cells[0], null, () => undefined).getAttribute('aria-label')
    ).toBe('Agent suggests a new markdown cell after this one');
    const retype = cellBlock(
      t,
      t.cells[1],
      'x and more',
      () => undefined,
      false,
      'code'
    );
    expect(retype.getAttribute('aria-label')).toBe(
      'Agent suggests a change, as a markdown cell'
    );
    // Cut: the listed before and after, not the live text; no "changed since" note, a "shown in part" one.
    expect(retype.querySelectorAll('.jp-mcp-diff-same')).toHaveLength(1);
    expect(retype.textContent).toContain('Shown in part');
    expect(retype.textContent).not.toContain('changed since');
  });

  it('bounds the lines it draws', () => {
    const lines = Array.from({ length: MAX_DIFF_LINES + 5 }, (_, i) => ({
      kind: 'add' as const,
      text: String(i)
    }));
    const node = diffNode(lines);
    expect(node.querySelectorAll('.jp-mcp-diff-line')).toHaveLength(
      MAX_DIFF_LINES
    );
    expect(node.querySelector('.jp-mcp-diff-more')!.textContent).toBe(
      '… 5 more lines'
    );
  });

  it('draws a text document’s suggestion with Accept and Reject for all of it', () => {
    const text = parseSuggestion({
      id: 't1',
      agent: { name: 'Agent' },
      text: { before: 'x\n', after: 'y\n' }
    })!;
    const calls: string[] = [];
    const node = textBlock(text, 'x\n', (sg, decision, cells) =>
      calls.push(`${sg.id} ${decision} ${cells ?? 'all'}`)
    );
    expect(node.dataset.mcpSuggestionId).toBe('t1');
    expect(node.querySelector('.jp-mcp-diff-add')!.textContent).toBe('y');
    node.querySelector<HTMLButtonElement>('.jp-mcp-suggestion-reject')!.click();
    expect(calls).toEqual(['t1 reject all']);
  });
});
