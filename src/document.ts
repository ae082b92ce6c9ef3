/**
 * One open document's presence: reads its awareness, draws the indicator and the cell marks, follows an
 * agent, and stops or allows agents through the REST API.
 */
import { showErrorMessage } from '@jupyterlab/apputils';
import { DocumentRegistry, IDocumentWidget } from '@jupyterlab/docregistry';
import { NotebookPanel } from '@jupyterlab/notebook';
import { IDisposable } from '@lumino/disposable';
import { ISignal, Signal } from '@lumino/signaling';

import { ApiError, fetchAgents, setStopped } from './api';
import { trans } from './i18n';
import { clear, drawMarks, showCell } from './cells';
import { IIndicatorState, Indicator } from './indicator';
import {
  documentPath,
  followTarget,
  IParticipant,
  marks,
  participants
} from './model';
import { IAgents } from './rest';

/** The part of a Yjs awareness this extension uses (a document's `sharedModel.awareness`). */
export interface IAwarenessLike {
  clientID: number;
  getStates(): Map<number, unknown>;
  on(event: 'change', handler: () => void): void;
  off(event: 'change', handler: () => void): void;
}

/** Milliseconds between an awareness change and the redraw (carets move often). */
const REDRAW_DELAY = 100;

/** The presence of one document widget (notebook or file editor). */
export class DocumentPresence implements IDisposable {
  constructor(
    readonly widget: IDocumentWidget,
    readonly context: DocumentRegistry.Context,
    private readonly _openActivity: (presence: DocumentPresence) => void
  ) {
    this.indicator = new Indicator({
      jump: key => void this.jumpToAgent(key),
      follow: key => this.toggleFollow(key),
      stop: (key, stop) => void this.stop(key, stop),
      point: (_key, cellId) => void this.showCell(cellId),
      activity: () => this._openActivity(this)
    });
    this.indicator.node.setAttribute('data-mcp-path', this.path);
    widget.toolbar.insertItem(10, 'mcpPresence', this.indicator);
    const notebook = this.notebook;
    if (notebook) {
      notebook.model?.cells.changed.connect(this._schedule, this);
    }
    context.pathChanged.connect(this._pathChanged, this);
    void context.ready.then(() => {
      if (!this.isDisposed) {
        this._connect();
      }
    });
    this._connect();
  }

  readonly indicator: Indicator;

  /** Emitted after the participants changed (the activity panel refreshes then). */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get path(): string {
    return documentPath(this.context.path);
  }

  get people(): IParticipant[] {
    return this._people;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The notebook when the document is one. */
  get notebook(): NotebookPanel['content'] | null {
    return this.widget instanceof NotebookPanel ? this.widget.content : null;
  }

  async showCell(cellId: string): Promise<boolean> {
    const notebook = this.notebook;
    return notebook ? showCell(notebook, cellId) : false;
  }

  async jumpToAgent(key: string): Promise<void> {
    const agent = this._people.find(p => p.kind === 'agent' && p.key === key);
    if (agent?.cellId) {
      await this.showCell(agent.cellId);
    }
  }

  toggleFollow(key: string): void {
    this._followed = this._followed === key ? null : key;
    this._lastFollowed = null;
    this._redraw();
  }

  async stop(key: string, stop: boolean): Promise<void> {
    try {
      await setStopped(key, this.path, stop);
    } catch (error) {
      await showErrorMessage(
        stop
          ? trans.__('The agent could not be stopped')
          : trans.__('The agent could not be allowed again'),
        error instanceof Error ? error.message : String(error)
      );
    }
    await this._refreshAgents();
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._awareness?.off('change', this._onChange);
    this._awareness = null;
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    for (const node of this._marked) {
      clear(node);
    }
    this._marked.clear();
    Signal.clearData(this);
    this.indicator.dispose();
  }

  private _connect(): void {
    if (this._awareness) {
      return;
    }
    const shared = this.context.model?.sharedModel as unknown as {
      awareness?: IAwarenessLike;
    };
    const awareness = shared?.awareness;
    if (!awareness || typeof awareness.getStates !== 'function') {
      this.indicator.addClass('jp-mcp-no-awareness');
      return;
    }
    this.indicator.removeClass('jp-mcp-no-awareness');
    this._awareness = awareness;
    awareness.on('change', this._onChange);
    this._redraw();
    void this._refreshAgents();
  }

  private _onChange = (): void => {
    this._schedule();
  };

  private _schedule(): void {
    if (this._timer === null && !this._disposed) {
      this._timer = setTimeout(() => {
        this._timer = null;
        this._redraw();
      }, REDRAW_DELAY);
    }
  }

  private _pathChanged(): void {
    this.indicator.node.setAttribute('data-mcp-path', this.path);
    void this._refreshAgents();
  }

  private _redraw(): void {
    if (this._disposed || !this._awareness) {
      return;
    }
    const people = participants(
      this._awareness.getStates().entries(),
      this._awareness.clientID
    );
    const agentKeys = people
      .filter(p => p.kind === 'agent')
      .map(p => p.key)
      .join(' ');
    const cellMarks = marks(people, this._dismissed);
    const notebook = this.notebook;
    if (notebook) {
      this._marked = drawMarks(notebook, cellMarks, this._marked, key =>
        this._dismiss(key)
      );
    }
    this.indicator.update_({
      people,
      stopped: this._agents?.agents.filter(a => a.stopped) ?? [],
      canStop: this._agents?.canStop ?? false,
      followed: this._followed,
      points: ([] as IIndicatorState['points']).concat(
        ...cellMarks.points.values()
      ),
      cells: notebook !== null
    });
    const target = followTarget(people, this._followed, this._lastFollowed);
    if (target) {
      this._lastFollowed = target;
      void this.showCell(target);
    }
    this._people = people;
    if (agentKeys !== this._agentKeys) {
      this._agentKeys = agentKeys;
      void this._refreshAgents();
    }
    this._changed.emit();
  }

  private _dismiss(key: string): void {
    const agent = this._people.find(p => p.kind === 'agent' && p.key === key);
    if (agent?.point) {
      this._dismissed.set(key, agent.point.at);
      this._redraw();
    }
  }

  /** Ask the server which agents are stopped and whether this person may stop them. */
  private async _refreshAgents(): Promise<void> {
    const serial = ++this._agentsSerial;
    let agents: IAgents | null;
    try {
      agents = await fetchAgents(this.path);
    } catch (error) {
      // A server without the API (404) or a refusal: no stop buttons.
      agents = null;
      if (!(error instanceof ApiError)) {
        console.warn('jupyter-pair-mcp: agents of', this.path, error);
      }
    }
    if (serial === this._agentsSerial && !this._disposed) {
      this._agents = agents;
      this._redraw();
    }
  }

  private _awareness: IAwarenessLike | null = null;
  private _people: IParticipant[] = [];
  private _agents: IAgents | null = null;
  private _agentKeys = '';
  private _agentsSerial = 0;
  private _followed: string | null = null;
  private _lastFollowed: string | null = null;
  private _dismissed = new Map<string, number>();
  private _marked = new Set<HTMLElement>();
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _disposed = false;
  private _changed = new Signal<this, void>(this);
}
