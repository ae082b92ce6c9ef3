/**
 * jupyter-pair-mcp's JupyterLab and Notebook 7 extension: who is in a document (people and agents),
 * where the agents work and point, what they did, and a stop button.
 *
 * Only APIs both applications have are used: document widget extensions for the toolbars, the notebook
 * and editor trackers for the current document, and the shell's right area for the activity panel.
 */
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { DocumentRegistry, IDocumentWidget } from '@jupyterlab/docregistry';
import { IEditorTracker } from '@jupyterlab/fileeditor';
import { INotebookTracker } from '@jupyterlab/notebook';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { ITranslator, nullTranslator } from '@jupyterlab/translation';
import { DisposableDelegate, IDisposable } from '@lumino/disposable';
import { MessageLoop } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { ActivityPanel } from './activity';
import { DocumentPresence } from './document';
import { GrantsView } from './grants';
import { setTranslator, trans } from './i18n';
import { activateLocks } from './locks';
import { DocumentReview } from './review';
import { followReviewSetting, PLUGIN_ID } from './settings';
import { followShowRequests } from './view';

/** Command that shows the activity panel. */
export const ACTIVITY_COMMAND = 'jupyter-pair-mcp:show-activity';

/** Adds the presence indicator to each document widget it is registered for. */
class PresenceExtension implements DocumentRegistry.IWidgetExtension<
  IDocumentWidget,
  DocumentRegistry.IModel
> {
  constructor(
    private readonly _onCreated: (presence: DocumentPresence) => void,
    private readonly _openActivity: (presence: DocumentPresence) => void
  ) {}

  createNew(
    widget: IDocumentWidget,
    context: DocumentRegistry.IContext<DocumentRegistry.IModel>
  ): IDisposable {
    const presence = new DocumentPresence(widget, context, this._openActivity);
    const review = new DocumentReview(presence);
    this._onCreated(presence);
    const dispose = () => {
      review.dispose();
      presence.dispose();
    };
    widget.disposed.connect(dispose);
    return new DisposableDelegate(dispose);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'Shows the people and AI agents in a document, where the agents work, and what they did.',
  autoStart: true,
  optional: [INotebookTracker, IEditorTracker, ISettingRegistry, ITranslator],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker | null,
    editors: IEditorTracker | null,
    settings: ISettingRegistry | null,
    translator: ITranslator | null
  ) => {
    setTranslator(translator);
    followShowRequests(app);
    if (settings) {
      void followReviewSetting(settings);
    }
    if (notebooks) {
      activateLocks(app, notebooks); // cells and notebooks a person locks against agents (src/locks.ts)
    }
    const presences = new WeakMap<object, DocumentPresence>();
    const open = new Set<DocumentPresence>();
    const panel = new ActivityPanel();
    // The person's grants: which agents hold a key of theirs, to revoke; a token for a headless agent.
    panel.addSection(
      new GrantsView((translator ?? nullTranslator).load('jupyter_pair_mcp'))
    );
    let added = false;
    const openActivity = (presence?: DocumentPresence) => {
      if (presence) {
        panel.setDocument(presence);
      }
      if (!added) {
        app.shell.add(panel, 'right', { rank: 900 });
        added = true;
      }
      app.shell.activateById(panel.id);
    };
    app.commands.addCommand(ACTIVITY_COMMAND, {
      // Functions: the palette and menus ask each time, in the language of the translator set above.
      label: () => trans.__('Show Agent Activity'),
      caption: () => trans.__('What AI agents did in the current document'),
      describedBy: { args: { type: 'object', properties: {} } },
      execute: () => openActivity()
    });
    const follow = (widget: object | null) => {
      const presence = widget ? presences.get(widget) : undefined;
      if (presence) {
        panel.setDocument(presence);
      }
    };
    const extension = new PresenceExtension(presence => {
      presences.set(presence.widget, presence);
      open.add(presence);
      if (!panel.presence || panel.presence.isDisposed) {
        panel.setDocument(presence);
      }
      // A document brought on screen (its tab chosen, or opened) is the one to show, even where focus (and
      // so the shell's current widget) did not move.
      MessageLoop.installMessageHook(presence.widget, (_, message) => {
        if (
          message.type === 'after-show' ||
          message.type === 'activate-request'
        ) {
          setTimeout(() => {
            if (presence.widget.isVisible) {
              follow(presence.widget);
            }
          }, 0);
        }
        return true;
      });
      setTimeout(syncCurrent, 0);
      presence.widget.disposed.connect(() => {
        open.delete(presence);
        if (panel.presence === presence) {
          panel.setDocument(null);
        }
      });
    }, openActivity);
    app.docRegistry.addWidgetExtension('Notebook', extension);
    app.docRegistry.addWidgetExtension('Editor', extension);
    /**
     * Show the current document's activity: the shell's current widget, else the last notebook or editor,
     * preferring one on screen (the current widgets follow focus, which a page without focus never moves),
     * else any document on screen.
     */
    const syncCurrent = () => {
      const candidates = [
        app.shell.currentWidget,
        notebooks?.currentWidget ?? null,
        editors?.currentWidget ?? null,
        ...Array.from(open, presence => presence.widget)
      ].filter((widget): widget is Widget => !!widget && presences.has(widget));
      const shown =
        candidates.find(widget => widget.isVisible) ?? candidates[0];
      if (shown) {
        follow(shown);
      }
    };
    panel.onShow = syncCurrent;
    app.shell.currentChanged?.connect(syncCurrent);
    notebooks?.currentChanged.connect(syncCurrent);
    editors?.currentChanged.connect(syncCurrent);
    app.restored
      .then(() => {
        // The panel is added at start only in JupyterLab (a restored layout may show it); Notebook 7 adds it
        // when the person opens it from the indicator.
        if (app.name === 'JupyterLab') {
          app.shell.add(panel, 'right', { rank: 900 });
          added = true;
        }
        syncCurrent();
      })
      .catch(error => console.warn('jupyter-pair-mcp:', error));
  }
};

export default plugin;
