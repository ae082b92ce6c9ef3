import {
  AGENT_PREFIX,
  DEFAULT_COLOR,
  describe as describeParticipant,
  documentPath,
  followTarget,
  initialsOf,
  marks,
  participants,
  safeColor
} from '../model';

const person = (username: string, name: string, color = '#123456') => ({
  user: { username, name, display_name: name, initials: '', color }
});

const agent = (key: string, extra: Record<string, unknown> = {}) => ({
  user: {
    username: `${AGENT_PREFIX}${key}`,
    name: `agent ${key}`,
    display_name: `Claude ${key} (AI agent)`,
    initials: 'C',
    color: 'var(--jp-collaborator-color3)',
    avatar_url: null
  },
  agent: {
    client: 'claude-code',
    status: 'editing',
    message: null,
    cell_id: null,
    ...extra
  }
});

describe('participants', () => {
  it('lists agents first, people grouped by username, and marks this browser', () => {
    const states: [number, unknown][] = [
      [3, person('bob', 'Bob Builder')],
      [1, person('ada', 'Ada Lovelace')],
      [7, agent('k1', { cell_id: 'c-2' })],
      [4, person('ada', 'Ada Lovelace')]
    ];
    const people = participants(states, 4);
    expect(people.map(p => [p.kind, p.key])).toEqual([
      ['agent', 'k1'],
      ['person', 'ada'],
      ['person', 'bob']
    ]);
    const ada = people[1];
    expect(ada.clientIds).toEqual([1, 4]);
    expect(ada.isSelf).toBe(true);
    expect(ada.initials).toBe('AL');
    const k1 = people[0];
    expect(k1.name).toBe('Claude k1 (AI agent)');
    expect(k1.client).toBe('claude-code');
    expect(k1.cellId).toBe('c-2');
    expect(k1.username).toBe('mcp-agent-k1');
  });

  it('tolerates states with missing or odd fields', () => {
    const states: [number, unknown][] = [
      [1, null],
      [2, {}],
      [3, { user: 'x' }],
      [4, { user: { username: 42 } }],
      [5, { user: { username: 'mcp-agent-z' } }],
      [
        6,
        { user: { username: 'eve', color: 'red;background:url(x)' }, agent: [] }
      ],
      [
        7,
        { user: { username: 'mcp-agent-y' }, agent: { point: { cell_id: 5 } } }
      ]
    ];
    const people = participants(states);
    expect(people.map(p => p.key)).toEqual(['y', 'z', 'eve']);
    const eve = people[2];
    expect(eve.kind).toBe('person');
    expect(eve.color).toBe(DEFAULT_COLOR);
    expect(people[0].point).toBeNull();
    expect(people[1].client).toBeNull();
    expect(people[1].name).toBe('mcp-agent-z');
  });

  it('keeps the newest point of an agent with several states', () => {
    const people = participants([
      [1, agent('k', { point: { cell_id: 'a', message: 'old', at: 1 } })],
      [2, agent('k', { point: { cell_id: 'b', message: 'new', at: 2 } })]
    ]);
    expect(people).toHaveLength(1);
    expect(people[0].point).toEqual({ cellId: 'b', message: 'new', at: 2 });
  });
});

describe('describe', () => {
  it('gives the full name, the kind and the client', () => {
    const [a, p] = participants([
      [1, agent('k')],
      [2, person('ada', 'Ada Lovelace')]
    ]);
    // Names isolated (U+2068 ... U+2069); "AI agent" once, as the server's name says it.
    expect(describeParticipant(a)).toBe(
      '\u2068Claude k (AI agent)\u2069 · client: \u2068claude-code\u2069 · editing'
    );
    expect(describeParticipant(p)).toBe('\u2068Ada Lovelace\u2069 · ada');
    const [anonymous] = participants(
      [[5, person('0123456789abcdef0123456789abcdef', 'Anonymous Io')]],
      5
    );
    expect(describeParticipant(anonymous)).toBe(
      '\u2068Anonymous Io\u2069 · you'
    );
  });
});

describe('marks', () => {
  it('marks the cells agents work in and point at, skipping dismissed points', () => {
    const people = participants([
      [
        1,
        agent('a', {
          cell_id: 'c1',
          point: { cell_id: 'c3', message: 'look', at: 10 }
        })
      ],
      [
        2,
        agent('b', {
          cell_id: 'c1',
          point: { cell_id: 'c4', message: 'here', at: 11 }
        })
      ],
      [3, { ...person('ada', 'Ada'), agent: undefined }]
    ]);
    const result = marks(people, new Map([['b', 11]]));
    expect(Array.from(result.working.keys())).toEqual(['c1']);
    expect(result.working.get('c1')!.map(a => a.key)).toEqual(['a', 'b']);
    expect(Array.from(result.points.keys())).toEqual(['c3']);
    expect(result.points.get('c3')![0].point.message).toBe('look');
    // A new point of the same agent shows again.
    const again = participants([
      [2, agent('b', { point: { cell_id: 'c5', at: 12 } })]
    ]);
    expect(
      Array.from(marks(again, new Map([['b', 11]])).points.keys())
    ).toEqual(['c5']);
  });
});

describe('followTarget', () => {
  const people = participants([[1, agent('a', { cell_id: 'c2' })]]);
  it('moves to the agent cell only when it changed', () => {
    expect(followTarget(people, 'a', null)).toBe('c2');
    expect(followTarget(people, 'a', 'c2')).toBeNull();
    expect(followTarget(people, 'a', 'c1')).toBe('c2');
    expect(followTarget(people, null, null)).toBeNull();
    expect(followTarget(people, 'gone', null)).toBeNull();
  });
});

describe('small helpers', () => {
  it('reads initials, colours and paths', () => {
    expect(initialsOf('Claude (AI agent)')).toBe('C');
    expect(initialsOf('')).toBe('?');
    expect(safeColor('#abc')).toBe('#abc');
    expect(safeColor('var(--jp-collaborator-color1)')).toBe(
      'var(--jp-collaborator-color1)'
    );
    expect(safeColor('rgb(1, 2, 3)')).toBe('rgb(1, 2, 3)');
    expect(safeColor('url(javascript:x)')).toBe(DEFAULT_COLOR);
    expect(documentPath('RTC:dir/a.ipynb')).toBe('dir/a.ipynb');
    expect(documentPath('dir/a.ipynb')).toBe('dir/a.ipynb');
  });
});
