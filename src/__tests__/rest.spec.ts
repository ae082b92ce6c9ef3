import {
  cellLabel,
  lastEdits,
  mergeActivity,
  parseActivity,
  parseAgents,
  shortTime
} from '../rest';

describe('parseActivity', () => {
  it('reads entries in order, skipping duplicates and entries without seq', () => {
    const activity = parseActivity({
      entries: [
        {
          seq: 2,
          time: '2026-11-26T16:00:00Z',
          kind: 'run',
          agent: { key: 'k', name: 'Claude', client: 'claude-code' },
          summary: 'ran cell 1',
          cells: [
            { cell_id: 'c1', index: 1 },
            { cell_id: 7 },
            { cell_id: 'c2' }
          ],
          version: null
        },
        {
          seq: 1,
          kind: 'edit',
          agent: {},
          cells: 'x',
          version: 3,
          before_version: '2'
        },
        { seq: 2, kind: 'edit' },
        { kind: 'edit' },
        'junk',
        { seq: 3, kind: 'stop', agent: { key: 'k' }, by: 'ada' }
      ],
      latest: 9,
      more: true
    });
    expect(activity.latest).toBe(9);
    expect(activity.more).toBe(true);
    expect(activity.entries.map(e => e.seq)).toEqual([1, 2, 3]);
    const [first, second, third] = activity.entries;
    expect(first.agentName).toBe('an agent');
    expect(first.cells).toEqual([]);
    expect(first.version).toBe('3');
    expect(first.beforeVersion).toBe('2');
    expect(second.beforeVersion).toBeNull();
    expect(second.cells).toEqual([
      { cellId: 'c1', index: 1 },
      { cellId: 'c2', index: null }
    ]);
    expect(second.client).toBe('claude-code');
    expect(third.by).toBe('ada');
    expect(third.agentName).toBe('k');
  });

  it('answers an empty timeline for a body it cannot read', () => {
    expect(parseActivity(null)).toEqual({
      entries: [],
      latest: null,
      more: false,
      undoable: null
    });
    expect(parseActivity({ entries: {} })).toEqual({
      entries: [],
      latest: null,
      more: false,
      undoable: null
    });
  });

  it('takes the last seq as latest when the server gives none', () => {
    expect(parseActivity({ entries: [{ seq: 4 }, { seq: 6 }] }).latest).toBe(6);
  });
});

describe('mergeActivity', () => {
  it('merges by seq and keeps the newest within the limit', () => {
    const a = parseActivity({ entries: [{ seq: 1 }, { seq: 2 }] }).entries;
    const b = parseActivity({
      entries: [{ seq: 2, summary: 'again' }, { seq: 3 }]
    }).entries;
    const merged = mergeActivity(a, b, 2);
    expect(merged.map(e => e.seq)).toEqual([2, 3]);
    expect(merged[0].summary).toBe('again');
  });
});

describe('parseAgents', () => {
  it('reads agents and the stop permission', () => {
    const agents = parseAgents({
      agents: [
        { key: 'k', name: 'Claude', client: 'c', stopped: true },
        { name: 'no key' }
      ],
      can_stop: true
    });
    expect(agents).toEqual({
      agents: [{ key: 'k', name: 'Claude', client: 'c', stopped: true }],
      canStop: true
    });
    expect(parseAgents({ can_stop: 'yes' }).canStop).toBe(false);
  });
});

describe('labels', () => {
  it('labels cells and times', () => {
    expect(cellLabel({ cellId: 'abcdef1234', index: 2 })).toBe('cell 2');
    expect(cellLabel({ cellId: 'abcdef1234', index: null })).toBe(
      'cell abcdef12'
    );
    expect(shortTime('nonsense')).toBe('');
    expect(shortTime('2026-11-26T16:00:05Z')).toMatch(/^\d\d:\d\d:05$/);
  });
});

describe('lastEdits', () => {
  it('gives each agent its newest edit', () => {
    const { entries } = parseActivity({
      entries: [
        { seq: 1, kind: 'edit', agent: { key: 'a' } },
        { seq: 2, kind: 'edit', agent: { key: 'b' } },
        { seq: 3, kind: 'edit', agent: { key: 'a' } },
        { seq: 4, kind: 'run', agent: { key: 'a' } },
        { seq: 5, kind: 'restore', agent: null, by: 'ada' }
      ]
    });
    expect(lastEdits(entries)).toEqual(new Set([2, 3]));
    expect(entries[4].agentName).toBe('ada');
  });

  it('follows the server once it says which entries the next undos take back', () => {
    const { entries, undoable } = parseActivity({
      entries: [
        { seq: 1, kind: 'edit', agent: { key: 'a' } },
        { seq: 2, kind: 'edit', agent: { key: 'a' } },
        { seq: 3, kind: 'undo', agent: { key: 'a' }, by: 'ada' }
      ],
      undoable: [1, 'x']
    });
    expect(undoable).toEqual([1]);
    // After the undo of seq 2, the button moves to seq 1 (not the newest edit, already undone).
    expect(lastEdits(entries, undoable)).toEqual(new Set([1]));
    expect(lastEdits(entries, [])).toEqual(new Set());
  });
});
