/**
 * Review of agents' suggestions in one open document: polls api/mcp/suggestions while the document is on
 * screen, draws each pending cell change on its notebook cell (a text document's in a panel above the
 * editor), and sends the person's Accept / Reject.
 *
 * A server without the review API (GET answers a bare 404) gets no review UI and no further polls.
 */
import { MainAreaWidget, showErrorMessage } from '@jupyterlab/apputils';
import { IDisposable } from '@lumino/disposable';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { ApiError, decideSuggestion, fetchSuggestions } from './api';
import { trans } from './i18n';
import { DocumentPresence } from './document';
import {
  Decide,
  SUGGESTED_CELL,
  SUGGESTED_DELETE,
  SUGGESTIONS,
  cellBlock,
  orphanBlock,
  textBlock
} from './reviewdom';
import { IPlacement, ISuggestion, pending, placements } from './suggestions';

/** Milliseconds between polls while the document is on screen. */
export const REVIEW_POLL = 2000;
/** Milliseconds between an awareness change (an agent acted) and the refresh it triggers. */
const CHANGE_DELAY = 300;

/** Remove the review blocks and marks from a cell node. */
export function clearReview(node: HTMLElement): void {
  node.classList.remove(SUGGESTED_CELL, SUGGESTED_DELETE);
  for (const child of Array.from(
    node.querySelectorAll(`:scope > .${SUGGESTIONS}`)
  )) {
    child.remove();
  }
}

/** The review of one document. */
export class DocumentReview implements IDisposable {
  constructor(readonly presence: DocumentPresence) {
    this._panel = new Widget();
    this._panel.addClass('jp-mcp-review-panel');
    this._panel.node.setAttribute(
      'aria-label',
      trans.__('Suggestions under review')
    );
    this._list = document.createElement('div');
    this._list.className = SUGGESTIONS;
    this._panel.node.appendChild(this._list);
    this._panel.hide();
    const widget = presence.widget;
    if (widget instanceof MainAreaWidget) {
      widget.contentHeader.addWidget(this._panel);
      if (typeof ResizeObserver !== 'undefined') {
        this._resize = new ResizeObserver(() => this._fitPanel());
        this._resize.observe(this._list);
      }
    }
    presence.changed.connect(this._onChange, this);
    presence.notebook?.model?.cells.changed.connect(this._draw, this);
    // The person types: the diffs against the live text follow (a cell is redrawn only if its text moved).
    presence.context.model?.contentChanged.connect(this._onContent, this);
    void presence.context.ready.then(() => this._draw());
    // Brought back on screen: fresh at once, not at the next poll.
    MessageLoop.installMessageHook(presence.widget, this._onMessage);
    this._poll = setInterval(() => {
      if (this.presence.widget.isVisible) {
        void this.refresh();
      }
    }, REVIEW_POLL);
    void this.refresh();
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** The pending suggestions shown. */
  get suggestions(): ISuggestion[] {
    return this._suggestions;
  }

  /** Fetch the document's suggestions and redraw (once more after the current fetch if one is running). */
  async refresh(): Promise<void> {
    if (this._disposed || this._unavailable) {
      return;
    }
    if (this._loading) {
      // An answer read before a decision would redraw what was just decided: ask again after it.
      this._again = true;
      return;
    }
    this._loading = true;
    const path = this.presence.path;
    try {
      const answer = await fetchSuggestions(path);
      if (path === this.presence.path) {
        this._suggestions = pending(answer.suggestions);
      }
    } catch (error) {
      if (
        error instanceof ApiError &&
        error.status === 404 &&
        !error.explained
      ) {
        // No review API on this server: nothing to show, nothing to ask again.
        this._unavailable = true;
        clearInterval(this._poll);
        this._suggestions = [];
      } else if (!(error instanceof ApiError)) {
        console.warn('jupyter-pair-mcp: suggestions of', path, error);
      }
    } finally {
      this._loading = false;
    }
    this._draw();
    if (this._again) {
      this._again = false;
      await this.refresh();
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    clearInterval(this._poll);
    if (this._timer !== null) {
      clearTimeout(this._timer);
    }
    this.presence.changed.disconnect(this._onChange, this);
    MessageLoop.removeMessageHook(this.presence.widget, this._onMessage);
    this.presence.notebook?.model?.cells.changed.disconnect(this._draw, this);
    this.presence.context.model?.contentChanged.disconnect(
      this._onContent,
      this
    );
    if (this._drawTimer !== null) {
      clearTimeout(this._drawTimer);
    }
    this._resize?.disconnect();
    for (const node of this._drawn) {
      clearReview(node);
    }
    this._drawn.clear();
    this._panel.dispose();
  }

  /**
   * The awareness changed: ask again soon if an agent's state did (it acted), not for people's carets, which
   * move at every keystroke.
   */
  private _onChange(): void {
    const agents = JSON.stringify(
      this.presence.people
        .filter(p => p.kind === 'agent')
        .map(p => [p.key, p.cellId, p.status, p.message, p.point?.at ?? 0])
    );
    if (agents === this._agents) {
      return;
    }
    this._agents = agents;
    if (this._timer === null && !this._disposed) {
      this._timer = setTimeout(() => {
        this._timer = null;
        void this.refresh();
      }, CHANGE_DELAY);
    }
  }

  private _onMessage = (_: unknown, message: { type: string }): boolean => {
    if (message.type === 'after-show' && this._timer === null) {
      this._timer = setTimeout(() => {
        this._timer = null;
        void this.refresh();
      }, 0);
    }
    return true;
  };

  private _onContent(): void {
    if (this._drawTimer === null && !this._disposed) {
      this._drawTimer = setTimeout(() => {
        this._drawTimer = null;
        this._draw();
      }, CHANGE_DELAY);
    }
  }

  private _decide: Decide = (suggestion, decision, cells) => {
    void (async () => {
      try {
        await decideSuggestion(suggestion.id, decision, cells ?? undefined);
      } catch (error) {
        await showErrorMessage(
          decision === 'accept'
            ? trans.__('The suggestion could not be accepted')
            : trans.__('The suggestion could not be rejected'),
          error instanceof Error ? error.message : String(error)
        );
      }
      // Redraw from the server's state, whatever happened.
      this._signatures = new WeakMap();
      this._textSignature = '';
      await this.refresh();
    })();
  };

  private _draw(): void {
    if (this._disposed) {
      return;
    }
    if (this.presence.notebook) {
      this._drawCells();
    } else {
      this._drawText();
    }
  }

  /**
   * Draw the blocks on the notebook's cells. Nothing is drawn (and no cell visited) while there is nothing
   * to show; a cell's blocks are rebuilt only when its suggestions or its live text changed, so a poll that
   * brings nothing new leaves the page alone (and the diff is not computed again).
   */
  private _drawCells(): void {
    const notebook = this.presence.notebook!;
    if (
      !this._suggestions.length &&
      !this._drawn.size &&
      this._panel.isHidden
    ) {
      return;
    }
    const cells = notebook.widgets;
    const liveIds = cells.map(cell => cell.model?.id ?? '');
    const byAnchor = new Map<string, IPlacement[]>();
    // A new cell shows after the live cell it would follow, or on the first one: none in an empty notebook.
    const placed = placements(liveIds, this._suggestions).filter(
      p => p.anchor !== null || liveIds.length > 0
    );
    // Changes with no cell to show on (their cell was deleted since, or the notebook is empty): in the panel.
    const shownIds = new Set(
      placed.map(p => `${p.suggestion.id} ${p.cell.cellId}`)
    );
    const orphans = this._suggestions
      .map(suggestion => ({
        suggestion,
        cells: suggestion.cells.filter(
          c => !shownIds.has(`${suggestion.id} ${c.cellId}`)
        )
      }))
      .filter(o => o.cells.length > 0);
    if (orphans.length || !this._panel.isHidden) {
      this._drawPanel(JSON.stringify(orphans), () =>
        orphans.map(o => orphanBlock(o.suggestion, o.cells, this._decide))
      );
    }
    for (const placement of placed) {
      const anchor = placement.anchor ?? liveIds[0];
      if (anchor === undefined) {
        continue;
      }
      const list = byAnchor.get(anchor) ?? [];
      list.push(placement);
      byAnchor.set(anchor, list);
    }
    const now = new Set<HTMLElement>();
    for (const cell of cells) {
      const node = cell.node;
      const id = cell.model?.id ?? '';
      const shown = byAnchor.get(id);
      if (!shown && !this._drawn.has(node)) {
        continue;
      }
      if (!shown) {
        clearReview(node);
        this._signatures.delete(node);
        continue;
      }
      now.add(node);
      // The cell's own change first, then the new cells after it in their order.
      shown.sort(
        (x, y) =>
          Number(x.cell.change === 'insert') -
            Number(y.cell.change === 'insert') ||
          (x.cell.index ?? 0) - (y.cell.index ?? 0)
      );
      const live = cell.model?.sharedModel.getSource() ?? '';
      const signature = JSON.stringify([
        live,
        shown.map(p => [
          p.suggestion.id,
          p.suggestion.agentName,
          p.suggestion.summary,
          p.suggestion.cells.length,
          p.cell,
          p.anchor
        ])
      ]);
      if (this._signatures.get(node) === signature) {
        continue;
      }
      this._signatures.set(node, signature);
      clearReview(node);
      const container = document.createElement('div');
      container.className = SUGGESTIONS;
      container.dataset.cellId = id;
      for (const placement of shown) {
        const own = placement.cell.change !== 'insert';
        container.appendChild(
          cellBlock(
            placement.suggestion,
            placement.cell,
            own ? live : null,
            this._decide,
            placement.anchor === null,
            own ? (cell.model?.type ?? null) : null
          )
        );
      }
      node.classList.add(SUGGESTED_CELL);
      if (shown.some(p => p.cell.change === 'delete')) {
        node.classList.add(SUGGESTED_DELETE);
      }
      node.appendChild(container);
    }
    this._drawn = now;
  }

  /** Draw a text document's suggestions in the panel above its editor. */
  private _drawText(): void {
    const shown = this._suggestions.filter(s => s.text !== null);
    if (!shown.length && this._panel.isHidden) {
      // Nothing to show: the live text is not even read.
      return;
    }
    const model = this.presence.context.model as unknown as {
      sharedModel?: { getSource?: () => string };
    } | null;
    const live = model?.sharedModel?.getSource?.() ?? null;
    this._drawPanel(JSON.stringify([live, shown]), () =>
      shown.map(suggestion => textBlock(suggestion, live, this._decide))
    );
  }

  /** Fill the panel above the document (hidden when there is nothing to list). */
  private _drawPanel(signature: string, blocks: () => HTMLElement[]): void {
    if (signature === this._textSignature) {
      this._fitPanel();
      return;
    }
    this._textSignature = signature;
    this._list.textContent = '';
    const nodes = blocks();
    if (!nodes.length) {
      this._panel.hide();
      return;
    }
    this._list.append(...nodes);
    this._panel.show();
    this._fitPanel();
  }

  /**
   * Size the panel to its list, up to 40% of the document's height. The document widget lays out the panel
   * with a Lumino box layout, which reads a child's height from its min-height, not from its content.
   */
  private _fitPanel(): void {
    const list = this._list;
    const parent = this._panel.parent;
    if (this._disposed || !parent || !this._panel.isVisible) {
      return;
    }
    const limit = Math.max(120, this.presence.widget.node.clientHeight * 0.4);
    const height = `${Math.ceil(Math.min(list.offsetHeight + 10, limit))}px`;
    if (this._panel.node.style.minHeight !== height) {
      this._panel.node.style.minHeight = height;
      MessageLoop.sendMessage(parent, Widget.Msg.FitRequest);
    }
  }

  private _suggestions: ISuggestion[] = [];
  private _panel: Widget;
  private _list: HTMLElement;
  private _resize: ResizeObserver | null = null;
  private _drawTimer: ReturnType<typeof setTimeout> | null = null;
  private _drawn = new Set<HTMLElement>();
  private _signatures = new WeakMap<HTMLElement, string>();
  private _textSignature = '';
  private _loading = false;
  private _again = false;
  private _agents = '';
  private _unavailable = false;
  private _disposed = false;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _poll: ReturnType<typeof setInterval>;
}
