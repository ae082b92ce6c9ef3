/**
 * The per-document toolbar indicator: the people and agents in the document, a follow toggle and (for a
 * person allowed to) a stop button per agent, and the notices of agents pointing at cells.
 *
 * It only draws and reports clicks; the document's presence controller decides what they do. Every
 * element carries stable classes and data attributes (see the README of the browser tests).
 */
import { Widget } from '@lumino/widgets';

import { inkOn, trans } from './i18n';
import { describe, IParticipant, IPoint, isolated } from './model';
import { IAgentStatus } from './rest';

/** Milliseconds a control that vanished in a redraw gets its focus back when it reappears. */
const FOCUS_WAIT = 10_000;

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
    this.node.setAttribute(
      'aria-label',
      trans.__('People and agents in this document')
    );
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
    // Redrawing replaces the buttons: the one that had keyboard focus gets it back (its successor: Stop
    // becomes Allow), so toggling follow or stop never drops focus to the page.
    const active = document.activeElement;
    let focused =
      active instanceof HTMLElement && node.contains(active)
        ? (active.dataset.mcpFocus ?? null)
        : null;
    // A control that vanished for a redraw or two (a stopped agent leaves before the server lists it as
    // stopped, with its Allow): focus waited on the activity button and goes to it when it is back.
    const waiting = this._pendingFocus;
    if (
      focused === 'activity' &&
      waiting !== null &&
      Date.now() < waiting.until
    ) {
      focused = waiting.key;
    }
    this._pendingFocus = null;
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
        title: trans.__('Show what agents did in this document'),
        'aria-label': trans.__('Show agent activity')
      }
    );
    activity.textContent = '⟲';
    activity.dataset.mcpFocus = 'activity';
    activity.addEventListener('click', () => this._handlers.activity());
    node.appendChild(activity);
    if (focused !== null) {
      const again = Array.from(
        node.querySelectorAll<HTMLElement>('[data-mcp-focus]')
      ).find(element => element.dataset.mcpFocus === focused);
      (again ?? activity).focus();
      if (!again && focused !== 'activity') {
        this._pendingFocus = { key: focused, until: Date.now() + FOCUS_WAIT };
      }
    }
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
      title: jumpable
        ? trans.__('%1 — click to show its cell', description)
        : description,
      'aria-label': description
    });
    if (jumpable) {
      avatar.setAttribute('type', 'button');
      avatar.dataset.mcpFocus = `jump:${p.key}`;
      avatar.addEventListener('click', () => this._handlers.jump(p.key));
    } else {
      avatar.setAttribute('role', 'img');
    }
    avatar.style.setProperty('--jp-mcp-color', p.color);
    // Text that reads on the badge's colour (WCAG AA), whatever colour the awareness gave.
    avatar.style.setProperty('--jp-mcp-ink', inkOn(p.color));
    const initials = element('bdi', 'jp-mcp-initials', {
      'aria-hidden': 'true'
    });
    initials.textContent = p.initials;
    avatar.appendChild(initials);
    if (p.kind === 'agent') {
      const badge = element('span', 'jp-mcp-agent-badge', {
        'aria-hidden': 'true'
      });
      badge.textContent = trans.__('AI');
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
            ? trans.__('Stop following %1', isolated(p.name))
            : trans.__('Follow %1: keep its cell in view', isolated(p.name)),
          'aria-label': following
            ? trans.__('Stop following %1', isolated(p.name))
            : trans.__('Follow %1', isolated(p.name))
        });
        follow.dataset.mcpFocus = `follow:${p.key}`;
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
    const label = agent.client
      ? trans.__(
          '%1, AI agent (client: %2), stopped',
          isolated(agent.name),
          isolated(agent.client)
        )
      : trans.__('%1, AI agent, stopped', isolated(agent.name));
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
      ? trans.__('Stop %1 in this document', isolated(name))
      : trans.__('Allow %1 in this document again', isolated(name));
    const button = element('button', stop ? 'jp-mcp-stop' : 'jp-mcp-allow', {
      type: 'button',
      'data-mcp-agent-key': key,
      title: text,
      'aria-label': text
    });
    // A labelled control, not a bare symbol: the word is on the button, the agent's name in its label.
    const icon = element('span', 'jp-mcp-stop-icon', { 'aria-hidden': 'true' });
    icon.textContent = stop ? '■' : '▶';
    const word = element('span', 'jp-mcp-stop-word', { 'aria-hidden': 'true' });
    word.textContent = stop ? trans.__('Stop') : trans.__('Allow');
    button.append(icon, word);
    // Stop and Allow of one agent share a focus key: after a stop, focus lands on its Allow.
    button.dataset.mcpFocus = `stop:${key}`;
    button.addEventListener('click', () => this._handlers.stop(key, stop));
    return button;
  }

  private _notice(
    agent: IParticipant,
    point: IPoint,
    state: IIndicatorState
  ): HTMLElement {
    const text = point.message
      ? trans.__(
          '%1 points at a cell: %2',
          isolated(agent.name),
          isolated(point.message)
        )
      : trans.__('%1 points at a cell', isolated(agent.name));
    const notice = element(
      state.cells ? 'button' : 'span',
      'jp-mcp-point-notice',
      {
        'data-mcp-agent-key': agent.key,
        'data-cell-id': point.cellId,
        title: state.cells ? trans.__('%1 — click to show it', text) : text,
        'aria-label': text
      }
    );
    if (state.cells) {
      notice.setAttribute('type', 'button');
      notice.dataset.mcpFocus = `point:${agent.key}:${point.cellId}`;
      notice.addEventListener('click', () =>
        this._handlers.point(agent.key, point.cellId)
      );
    }
    notice.style.setProperty('--jp-mcp-color', agent.color);
    // Shortened on screen by CSS (ellipsis), isolated so right-to-left text cannot reorder what follows.
    const shown = element('bdi', 'jp-mcp-point-text');
    shown.textContent = point.message || agent.name;
    notice.append('☞ ', shown);
    return notice;
  }

  private _signature = '';
  private _pendingFocus: { key: string; until: number } | null = null;
}
