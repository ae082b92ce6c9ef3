/**
 * The activity side panel: a live timeline of what agents did in the current document (edits, runs,
 * broadcasts, refusals, stops), from the server's api/mcp/activity. Entries jump to their cells; undo and
 * restore call the same endpoints (and permissions) as the tools.
 */
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { historyIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import {
  ApiError,
  fetchActivity,
  restoreVersion,
  undoAgent,
  undoRestore
} from './api';
import { DocumentPresence } from './document';
import { trans } from './i18n';
import {
  cellLabel,
  IActivityEntry,
  lastEdits,
  mergeActivity,
  shortTime
} from './rest';

/** Milliseconds between polls while the panel is shown. */
const POLL_INTERVAL = 5000;
/** Milliseconds between an awareness change and the refresh it triggers. */
const CHANGE_DELAY = 700;

/** Another part of the panel, with its own data. */
export interface ISection {
  readonly node: HTMLElement;
  refresh(): Promise<void>;
}

/** The panel (one for the application; it shows the current document's activity). */
export class ActivityPanel extends Widget {
  constructor() {
    super();
    this.id = 'jp-mcp-activity';
    this.addClass('jp-mcp-activity');
    // A landmark, so assistive technology (and axe's "region" rule) finds the panel's content.
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', trans.__('Agent activity'));
    this.title.caption = trans.__('Agent activity');
    this.title.icon = historyIcon;
    this.title.label = trans.__('Agents');
    this._header = document.createElement('div');
    this._header.className = 'jp-mcp-activity-header';
    this._list = document.createElement('ol');
    this._list.className = 'jp-mcp-activity-list';
    this._list.setAttribute('aria-live', 'polite');
    this.node.append(this._header, this._list);
    this._render();
    this._poll = setInterval(() => {
      if (this.isVisible) {
        void this.refresh();
        this._sections.forEach(section => void section.refresh());
      }
    }, POLL_INTERVAL);
  }

  /** A section below the timeline (the grants), refreshed with it while the panel is shown. */
  addSection(section: ISection): void {
    this._sections.push(section);
    this.node.appendChild(section.node);
    if (this.isVisible) {
      void section.refresh();
    }
  }

  /** Show the activity of another document (null: none). */
  setDocument(presence: DocumentPresence | null): void {
    if (presence === this._presence) {
      return;
    }
    this._presence?.changed.disconnect(this._onChange, this);
    this._presence = presence;
    this._entries = [];
    this._latest = null;
    this._undoable = null;
    this._error = '';
    presence?.changed.connect(this._onChange, this);
    this._render();
    void this.refresh();
  }

  get presence(): DocumentPresence | null {
    return this._presence;
  }

  /** Fetch the entries newer than the ones shown. */
  async refresh(): Promise<void> {
    const presence = this._presence;
    if (!presence || presence.isDisposed || this._loading) {
      return;
    }
    this._loading = true;
    try {
      // A bounded number of pages per refresh: the rest comes with the next one.
      for (let page = 0; page < 5 && presence === this._presence; page++) {
        const activity = await fetchActivity(presence.path, this._latest);
        if (presence !== this._presence) {
          break;
        }
        this._entries = mergeActivity(this._entries, activity.entries);
        this._latest = activity.latest ?? this._latest;
        this._undoable = activity.undoable;
        this._error = '';
        if (!activity.more) {
          break;
        }
      }
    } catch (error) {
      if (presence === this._presence) {
        this._error =
          error instanceof ApiError && error.status === 404 && !error.explained
            ? trans.__(
                'This server keeps no agent activity (its jupyter-pair-mcp is older than this panel).'
              )
            : error instanceof Error
              ? error.message
              : String(error);
      }
    } finally {
      this._loading = false;
    }
    this._render();
  }

  dispose(): void {
    clearInterval(this._poll);
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this._presence?.changed.disconnect(this._onChange, this);
    super.dispose();
  }

  /** Called when the panel is shown, before it refreshes (the application points it at the current document). */
  onShow: (() => void) | null = null;

  protected onAfterShow(): void {
    this.onShow?.();
    void this.refresh();
    this._sections.forEach(section => void section.refresh());
  }

  private _onChange(): void {
    if (this._timer === null) {
      this._timer = setTimeout(() => {
        this._timer = null;
        if (this.isVisible) {
          void this.refresh();
        }
      }, CHANGE_DELAY);
    }
  }

  private _render(): void {
    const presence = this._presence;
    this._header.textContent = presence
      ? trans.__('Agent activity in %1', presence.path)
      : trans.__('Open a notebook or file to see what agents did in it.');
    this._header.setAttribute('data-mcp-path', presence?.path ?? '');
    if (this._error) {
      const error = document.createElement('div');
      error.className = 'jp-mcp-activity-error';
      error.textContent = this._error;
      this._header.appendChild(error);
    }
    this._list.textContent = '';
    const undoable = lastEdits(this._entries, this._undoable);
    for (const entry of [...this._entries].reverse()) {
      this._list.appendChild(this._entry(entry, undoable.has(entry.seq)));
    }
    if (presence && !this._entries.length && !this._error) {
      const empty = document.createElement('li');
      empty.className = 'jp-mcp-activity-empty';
      empty.textContent = trans.__('No agent activity yet.');
      this._list.appendChild(empty);
    }
  }

  private _entry(entry: IActivityEntry, undoable: boolean): HTMLElement {
    const item = document.createElement('li');
    item.className = `jp-mcp-activity-entry jp-mcp-activity-${entry.kind}`;
    item.dataset.mcpSeq = String(entry.seq);
    item.dataset.mcpKind = entry.kind;
    if (entry.agentKey) {
      item.dataset.mcpAgentKey = entry.agentKey;
    }
    const head = document.createElement('div');
    head.className = 'jp-mcp-activity-head';
    const time = document.createElement('time');
    time.className = 'jp-mcp-activity-time';
    time.dateTime = entry.time;
    time.textContent = shortTime(entry.time);
    const who = document.createElement('span');
    who.className = 'jp-mcp-activity-who';
    // Anonymous users' usernames are random hex: they tell a person nothing.
    const by =
      entry.by && !/^[0-9a-f]{32}$/i.test(entry.by) ? entry.by : 'a person';
    who.textContent = entry.by ? `${by} → ${entry.agentName}` : entry.agentName;
    who.title = entry.client
      ? trans.__('%1 (client: %2)', entry.agentName, entry.client)
      : entry.agentName;
    const kind = document.createElement('span');
    kind.className = 'jp-mcp-activity-kind';
    kind.textContent = entry.kind;
    head.append(time, who, kind);
    const summary = document.createElement('div');
    summary.className = 'jp-mcp-activity-summary';
    summary.textContent = entry.summary;
    item.append(head, summary);
    const actions = document.createElement('div');
    actions.className = 'jp-mcp-activity-actions';
    for (const cell of entry.cells) {
      const button = document.createElement('button');
      button.type = 'button';
      button.className = 'jp-mcp-activity-cell';
      button.dataset.cellId = cell.cellId;
      button.textContent = cellLabel(cell);
      button.title = trans.__('Show %1', cellLabel(cell));
      button.addEventListener(
        'click',
        () => void this._presence?.showCell(cell.cellId)
      );
      actions.appendChild(button);
    }
    if (undoable && entry.agentKey) {
      const key = entry.agentKey;
      const undo = document.createElement('button');
      undo.type = 'button';
      undo.className = 'jp-mcp-activity-undo';
      undo.dataset.mcpAgentKey = key;
      undo.textContent = trans.__('Undo');
      undo.title = trans.__(
        'Undo this edit of %1 (its latest not undone yet)',
        entry.agentName
      );
      undo.addEventListener(
        'click',
        () => void this._undo(key, entry.agentName)
      );
      actions.appendChild(undo);
    } else if (undoable && entry.kind === 'restore' && !entry.agentKey) {
      const undo = document.createElement('button');
      undo.type = 'button';
      undo.className = 'jp-mcp-activity-undo jp-mcp-activity-undo-restore';
      undo.textContent = trans.__('Undo restore');
      undo.title = trans.__('Undo this restore (your latest in this document)');
      undo.addEventListener('click', () => void this._undoRestore());
      actions.appendChild(undo);
    }
    if (entry.beforeVersion !== null) {
      const version = entry.beforeVersion;
      const restore = document.createElement('button');
      restore.type = 'button';
      restore.className = 'jp-mcp-activity-restore';
      restore.dataset.mcpVersion = version;
      restore.textContent = trans.__('Restore before');
      restore.title = trans.__(
        "Take back the agents' changes since just before this edit (version %1); what people typed since stays",
        version
      );
      restore.addEventListener('click', () => void this._restore(version));
      actions.appendChild(restore);
    }
    item.appendChild(actions);
    return item;
  }

  private async _undo(agent: string, name: string): Promise<void> {
    const presence = this._presence;
    if (!presence) {
      return;
    }
    await this._confirmed(
      trans.__('Undo agent edit'),
      trans.__(
        "Undo %1's last edit of %2? (What people typed since stays.)",
        name,
        presence.path
      ),
      () => undoAgent(presence.path, agent)
    );
  }

  private async _restore(version: string): Promise<void> {
    const presence = this._presence;
    if (!presence) {
      return;
    }
    await this._confirmed(
      trans.__('Restore before this edit'),
      trans.__(
        'Take back every agent change to %1 since version %2? What people typed since stays, except in a cell an agent added since (it goes, with its content). You can undo the restore from this panel.',
        presence.path,
        version
      ),
      async () => {
        const answer = (await restoreVersion(presence.path, version, true)) as {
          user_edits_reverted?: unknown;
        } | null;
        const lost = Array.isArray(answer?.user_edits_reverted)
          ? answer.user_edits_reverted.map(String)
          : [];
        if (lost.length) {
          await showErrorMessage(
            trans.__('Restore before this edit'),
            trans.__(
              'Cells an agent had added, with what people typed in them, were removed: %1. Undo the restore from the activity panel to bring them back.',
              lost.join(', ')
            )
          );
        }
      }
    );
  }

  private async _undoRestore(): Promise<void> {
    const presence = this._presence;
    if (!presence) {
      return;
    }
    await this._confirmed(
      trans.__('Undo restore'),
      trans.__(
        'Undo your latest restore of %1? (What people typed since stays.)',
        presence.path
      ),
      () => undoRestore(presence.path)
    );
  }

  private async _confirmed(
    title: string,
    body: string,
    action: () => Promise<unknown>
  ) {
    const result = await showDialog({
      title,
      body,
      buttons: [
        Dialog.cancelButton(),
        Dialog.warnButton({ label: trans.__('OK') })
      ]
    });
    if (!result.button.accept) {
      return;
    }
    try {
      await action();
    } catch (error) {
      await showErrorMessage(
        title,
        error instanceof Error ? error.message : String(error)
      );
    }
    await this.refresh();
  }

  private _presence: DocumentPresence | null = null;
  private _sections: ISection[] = [];
  private _entries: IActivityEntry[] = [];
  private _latest: number | null = null;
  private _undoable: number[] | null = null;
  private _loading = false;
  private _error = '';
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _poll: ReturnType<typeof setInterval>;
  private _header: HTMLElement;
  private _list: HTMLElement;
}
