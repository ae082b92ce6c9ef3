/**
 * The per-document toolbar indicator: the people and agents in the document, a follow toggle and (for a
 * person allowed to) a stop button per agent, and the notices of agents pointing at cells.
 *
 * It only draws and reports clicks; the document's presence controller decides what they do. Every
 * element carries stable classes and data attributes (see the README of the browser tests).
 */
import { Widget } from '@lumino/widgets';

import { describe, IParticipant, IPoint } from './model';
import { IAgentStatus } from './rest';

/** What the indicator shows. */
export interface IIndicatorState {
  people: IParticipant[];
  /** Agents the server lists as stopped on this document (they have no presence any more). */
  stopped: IAgentStatus[];
  canStop: boolean;
  followed: string | null;
  /** Points still shown (not dismissed). */
  points: { agent: IParticipant; point: IPoint }[];
  /** A notebook: cells can be jumped to. */
  cells: boolean;
}

/** What the indicator reports. */
export interface IIndicatorHandlers {
  jump(agentKey: string): void;
  follow(agentKey: string): void;
  stop(agentKey: string, stop: boolean): void;
  point(agentKey: string, cellId: string): void;
  activity(): void;
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  attributes: Record<string, string> = {}
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, value);
  }
  return node;
}

/** The toolbar item. */
export class Indicator extends Widget {
  constructor(private readonly _handlers: IIndicatorHandlers) {
    super();
    this.addClass('jp-mcp-indicator');
    this.node.setAttribute('role', 'group');
    this.node.setAttribute('aria-label', 'People and agents in this document');
  }

  /** Redraw, unless nothing shown changed (awareness changes with every caret move). */
  update_(state: IIndicatorState): void {
    const signature = JSON.stringify([
      state.people.map(p => [
        p.key,
        p.kind,
        p.name,
        p.initials,
        p.color,
        p.client,
        p.status,
        p.message,
        p.cellId,
        p.isSelf,
        p.clientIds.length
      ]),
      state.stopped.map(a => a.key),
      state.canStop,
      state.followed,
      state.points.map(p => [
        p.agent.key,
        p.point.cellId,
        p.point.at,
        p.point.message
      ]),
      state.cells
    ]);
    if (signature === this._signature) {
      return;
    }
    this._signature = signature;
    this._render(state);
  }

  private _render(state: IIndicatorState): void {
    const node = this.node;
    node.textContent = '';
    node.dataset.mcpCount = String(state.people.length);
    const list = element('ul', 'jp-mcp-participants', { role: 'list' });
    for (const participant of state.people) {
      list.appendChild(this._participant(participant, state));
    }
    const present = new Set(
      state.people.filter(p => p.kind === 'agent').map(p => p.key)
    );
    for (const agent of state.stopped) {
      if (!present.has(agent.key)) {
        list.appendChild(this._stopped(agent, state));
      }
    }
    node.appendChild(list);
    for (const { agent, point } of state.points) {
      node.appendChild(this._notice(agent, point, state));
    }
    const activity = element(
      'button',
      'jp-mcp-activity-open jp-ToolbarButtonComponent',
      {
        type: 'button',
        title: 'Show what agents did in this document',
        'aria-label': 'Show agent activity'
      }
    );
    activity.textContent = '⟲';
    activity.addEventListener('click', () => this._handlers.activity());
    node.appendChild(activity);
  }

  private _participant(p: IParticipant, state: IIndicatorState): HTMLElement {
    const description = describe(p);
    const item = element('li', `jp-mcp-participant jp-mcp-${p.kind}`, {
      'data-mcp-kind': p.kind,
      [p.kind === 'agent' ? 'data-mcp-agent-key' : 'data-mcp-username']: p.key
    });
    if (p.isSelf) {
      item.classList.add('jp-mcp-self');
    }
    if (p.cellId) {
      item.setAttribute('data-cell-id', p.cellId);
    }
    const jumpable = p.kind === 'agent' && state.cells && p.cellId !== null;
    const avatar = element(jumpable ? 'button' : 'span', 'jp-mcp-avatar', {
      title: jumpable ? `${description} — click to show its cell` : description,
      'aria-label': description
    });
    if (jumpable) {
      avatar.setAttribute('type', 'button');
      avatar.addEventListener('click', () => this._handlers.jump(p.key));
    } else {
      avatar.setAttribute('role', 'img');
    }
    avatar.style.setProperty('--jp-mcp-color', p.color);
    const initials = element('span', 'jp-mcp-initials', {
      'aria-hidden': 'true'
    });
    initials.textContent = p.initials;
    avatar.appendChild(initials);
    if (p.kind === 'agent') {
      const badge = element('span', 'jp-mcp-agent-badge', {
        'aria-hidden': 'true'
      });
      badge.textContent = 'AI';
      avatar.appendChild(badge);
    }
    item.appendChild(avatar);
    if (p.kind === 'agent') {
      if (state.cells) {
        const following = state.followed === p.key;
        const follow = element('button', 'jp-mcp-follow', {
          type: 'button',
          'aria-pressed': String(following),
          'data-mcp-agent-key': p.key,
          title: following
            ? `Stop following ${p.name}`
            : `Follow ${p.name}: keep its cell in view`,
          'aria-label': following
            ? `Stop following ${p.name}`
            : `Follow ${p.name}`
        });
        follow.textContent = following ? '◉' : '○';
        follow.addEventListener('click', () => this._handlers.follow(p.key));
        item.appendChild(follow);
      }
      // Stopped but still in the awareness (its presence is on its way out): shown stopped already.
      const stopped = state.stopped.some(a => a.key === p.key);
      if (stopped) {
        item.classList.add('jp-mcp-stopped');
      }
      if (state.canStop) {
        item.appendChild(this._stopButton(p.key, p.name, !stopped));
      }
    }
    return item;
  }

  private _stopped(agent: IAgentStatus, state: IIndicatorState): HTMLElement {
    const label = `${agent.name}, AI agent${agent.client ? ` (client: ${agent.client})` : ''} · stopped`;
    const item = element(
      'li',
      'jp-mcp-participant jp-mcp-agent jp-mcp-stopped',
      {
        'data-mcp-kind': 'agent',
        'data-mcp-agent-key': agent.key
      }
    );
    const avatar = element('span', 'jp-mcp-avatar', {
      role: 'img',
      title: label,
      'aria-label': label
    });
    const initials = element('span', 'jp-mcp-initials', {
      'aria-hidden': 'true'
    });
    initials.textContent = '■';
    avatar.appendChild(initials);
    item.appendChild(avatar);
    if (state.canStop) {
      item.appendChild(this._stopButton(agent.key, agent.name, false));
    }
    return item;
  }

  private _stopButton(key: string, name: string, stop: boolean): HTMLElement {
    const text = stop
      ? `Stop ${name} in this document`
      : `Allow ${name} in this document again`;
    const button = element('button', stop ? 'jp-mcp-stop' : 'jp-mcp-allow', {
      type: 'button',
      'data-mcp-agent-key': key,
      title: text,
      'aria-label': text
    });
    button.textContent = stop ? '■' : '▶';
    button.addEventListener('click', () => this._handlers.stop(key, stop));
    return button;
  }

  private _notice(
    agent: IParticipant,
    point: IPoint,
    state: IIndicatorState
  ): HTMLElement {
    const text = `${agent.name} points at a cell${point.message ? `: ${point.message}` : ''}`;
    const notice = element(
      state.cells ? 'button' : 'span',
      'jp-mcp-point-notice',
      {
        'data-mcp-agent-key': agent.key,
        'data-cell-id': point.cellId,
        title: state.cells ? `${text} — click to show it` : text,
        'aria-label': text
      }
    );
    if (state.cells) {
      notice.setAttribute('type', 'button');
      notice.addEventListener('click', () =>
        this._handlers.point(agent.key, point.cellId)
      );
    }
    notice.style.setProperty('--jp-mcp-color', agent.color);
    notice.textContent = `☞ ${point.message || agent.name}`;
    return notice;
  }

  private _signature = '';
}
