/**
 * The DOM the browser tests select on: the indicator's and the cell marks' classes and data attributes.
 */
import type { Notebook } from '@jupyterlab/notebook';

import { AGENT_CELL, drawMarks, POINTED_CELL, showCell } from '../cells';
import { IIndicatorHandlers, Indicator } from '../indicator';
import { AGENT_PREFIX, marks, participants } from '../model';

const states: [number, unknown][] = [
  [
    1,
    {
      user: {
        username: `${AGENT_PREFIX}k1`,
        display_name: 'claude-code (AI agent)',
        initials: 'C',
        color: '#e66100'
      },
      agent: {
        client: 'claude-code',
        cell_id: 'c2',
        point: { cell_id: 'c1', message: 'look here', at: 5 }
      }
    }
  ],
  [2, { user: { username: 'ada', name: 'Ada Lovelace', color: '#123456' } }]
];

function handlers(): IIndicatorHandlers & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    jump: key => calls.push(`jump ${key}`),
    follow: key => calls.push(`follow ${key}`),
    stop: (key, stop) => calls.push(`${stop ? 'stop' : 'allow'} ${key}`),
    point: (key, cellId) => calls.push(`point ${key} ${cellId}`),
    activity: () => calls.push('activity')
  };
}

describe('Indicator', () => {
  it('lists agents and people with names in title and aria-label, and reports clicks', () => {
    const people = participants(states, 2);
    const h = handlers();
    const indicator = new Indicator(h);
    indicator.update_({
      people,
      stopped: [{ key: 'k9', name: 'gone', client: null, stopped: true }],
      canStop: true,
      followed: null,
      points: Array.from(marks(people).points.values())[0],
      cells: true
    });
    const node = indicator.node;
    const agent = node.querySelector<HTMLElement>(
      '.jp-mcp-participant[data-mcp-kind="agent"][data-mcp-agent-key="k1"]'
    )!;
    expect(agent.dataset.cellId).toBe('c2');
    const avatar = agent.querySelector<HTMLElement>('.jp-mcp-avatar')!;
    expect(avatar.getAttribute('aria-label')).toContain(
      'claude-code (AI agent)'
    );
    expect(avatar.getAttribute('aria-label')).toContain(
      'client: \u2068claude-code\u2069'
    );
    // Said once: the server's name says "(AI agent)" already.
    expect(avatar.getAttribute('aria-label')!.split('AI agent').length).toBe(2);
    expect(avatar.title).toContain('AI agent');
    expect(agent.querySelector('.jp-mcp-agent-badge')!.textContent).toBe('AI');
    const person = node.querySelector<HTMLElement>(
      '.jp-mcp-participant[data-mcp-kind="person"][data-mcp-username="ada"]'
    )!;
    expect(person.classList.contains('jp-mcp-self')).toBe(true);
    expect(
      person.querySelector('.jp-mcp-avatar')!.getAttribute('aria-label')
    ).toBe('\u2068Ada Lovelace\u2069 · ada, you');
    avatar.click();
    agent.querySelector<HTMLElement>('.jp-mcp-follow')!.click();
    agent
      .querySelector<HTMLElement>('.jp-mcp-stop[data-mcp-agent-key="k1"]')!
      .click();
    node
      .querySelector<HTMLElement>(
        '.jp-mcp-stopped[data-mcp-agent-key="k9"] .jp-mcp-allow'
      )!
      .click();
    node
      .querySelector<HTMLElement>(
        '.jp-mcp-point-notice[data-mcp-agent-key="k1"][data-cell-id="c1"]'
      )!
      .click();
    node.querySelector<HTMLElement>('.jp-mcp-activity-open')!.click();
    expect(h.calls).toEqual([
      'jump k1',
      'follow k1',
      'stop k1',
      'allow k9',
      'point k1 c1',
      'activity'
    ]);
  });

  it('shows an agent the server lists as stopped as stopped, with an allow button', () => {
    const indicator = new Indicator(handlers());
    indicator.update_({
      people: participants(states, 2),
      stopped: [
        { key: 'k1', name: 'claude-code', client: null, stopped: true }
      ],
      canStop: true,
      followed: null,
      points: [],
      cells: true
    });
    const agents = indicator.node.querySelectorAll('[data-mcp-kind="agent"]');
    expect(agents).toHaveLength(1);
    expect(agents[0].classList.contains('jp-mcp-stopped')).toBe(true);
    expect(
      agents[0].querySelector('.jp-mcp-allow[data-mcp-agent-key="k1"]')
    ).not.toBeNull();
    expect(agents[0].querySelector('.jp-mcp-stop')).toBeNull();
  });

  it('shows no stop button without the permission, and a pressed follow toggle', () => {
    const people = participants(states, 2);
    const indicator = new Indicator(handlers());
    indicator.update_({
      people,
      stopped: [],
      canStop: false,
      followed: 'k1',
      points: [],
      cells: true
    });
    expect(indicator.node.querySelector('.jp-mcp-stop')).toBeNull();
    expect(
      indicator.node
        .querySelector('.jp-mcp-follow')!
        .getAttribute('aria-pressed')
    ).toBe('true');
  });
});

describe('drawMarks', () => {
  function notebook(ids: string[]): Notebook {
    const widgets = ids.map(id => ({
      node: document.createElement('div'),
      model: { id }
    }));
    return { widgets } as unknown as Notebook;
  }

  it('marks the agent cell and the pointed cell, and clears them when they move', () => {
    const nb = notebook(['c1', 'c2', 'c3']);
    const [n1, n2, n3] = nb.widgets.map(w => w.node);
    const dismissed: string[] = [];
    let marked = drawMarks(nb, marks(participants(states)), new Set(), key =>
      dismissed.push(key)
    );
    expect(n2.classList.contains(AGENT_CELL)).toBe(true);
    expect(n2.dataset.mcpAgents).toBe('k1');
    expect(
      n2
        .querySelector('.jp-mcp-gutter[data-cell-id="c2"] .jp-mcp-gutter-mark')!
        .getAttribute('data-mcp-agent-key')
    ).toBe('k1');
    expect(n1.classList.contains(POINTED_CELL)).toBe(true);
    const label = n1.querySelector<HTMLElement>(
      '.jp-mcp-point-label[data-mcp-agent-key="k1"][data-cell-id="c1"]'
    )!;
    expect(label.textContent).toContain('look here');
    label.querySelector<HTMLElement>('.jp-mcp-point-dismiss')!.click();
    expect(dismissed).toEqual(['k1']);
    expect(n3.className).toBe('');

    const moved = participants([
      [1, { user: { username: `${AGENT_PREFIX}k1` }, agent: { cell_id: 'c3' } }]
    ]);
    marked = drawMarks(nb, marks(moved), marked, () => undefined);
    expect(n2.classList.contains(AGENT_CELL)).toBe(false);
    expect(n2.querySelector('.jp-mcp-gutter')).toBeNull();
    expect(n1.querySelector('.jp-mcp-point-label')).toBeNull();
    expect(n3.classList.contains(AGENT_CELL)).toBe(true);
    expect(marked).toEqual(new Set([n3]));
  });
});

describe('showCell', () => {
  it("scrolls to the cell without selecting or activating it (the person's cursor stays)", async () => {
    const activate = jest.fn();
    const scrollToCell = jest.fn();
    const scrollToItem = jest.fn(async () => undefined);
    const widgets = ['c1', 'c2'].map(id => ({
      node: document.createElement('div'),
      model: { id },
      activate
    }));
    const nb = { widgets, scrollToItem, scrollToCell } as unknown as Notebook;
    expect(await showCell(nb, 'c2')).toBe(true);
    expect(scrollToItem).toHaveBeenCalledWith(1, 'center');
    expect(scrollToCell).not.toHaveBeenCalled();
    expect(activate).not.toHaveBeenCalled();
    expect(await showCell(nb, 'gone')).toBe(false);
  });
});
