/**
 * jupyter-notebook-mcp's JupyterLab and Notebook 7 extension: who is in a document (people and agents),
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
import { DisposableDelegate, IDisposable } from '@lumino/disposable';

import { ActivityPanel } from './activity';
import { DocumentPresence } from './document';

/** Command that shows the activity panel. */
export const ACTIVITY_COMMAND = 'jupyter-notebook-mcp:show-activity';

/** Adds the presence indicator to each document widget it is registered for. */
class PresenceExtension implements DocumentRegistry.IWidgetExtension<
  IDocumentWidget,
  DocumentRegistry.IModel
> {
  constructor(
    private readonly _onCreated: (presence: DocumentPresence) => void,
    private readonly _openActivity: () => void
  ) {}

  createNew(
    widget: IDocumentWidget,
    context: DocumentRegistry.IContext<DocumentRegistry.IModel>
  ): IDisposable {
    const presence = new DocumentPresence(widget, context, this._openActivity);
    this._onCreated(presence);
    widget.disposed.connect(() => presence.dispose());
    return new DisposableDelegate(() => presence.dispose());
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'jupyter-notebook-mcp:plugin',
  description:
    'Shows the people and AI agents in a document, where the agents work, and what they did.',
  autoStart: true,
  optional: [INotebookTracker, IEditorTracker],
  activate: (
    app: JupyterFrontEnd,
    notebooks: INotebookTracker | null,
    editors: IEditorTracker | null
  ) => {
    const presences = new WeakMap<object, DocumentPresence>();
    const panel = new ActivityPanel();
    let added = false;
    const openActivity = () => {
      if (!added) {
        app.shell.add(panel, 'right', { rank: 900 });
        added = true;
      }
      app.shell.activateById(panel.id);
    };
    app.commands.addCommand(ACTIVITY_COMMAND, {
      label: 'Show Agent Activity',
      caption: 'What AI agents did in the current document',
      describedBy: { args: { type: 'object', properties: {} } },
      execute: openActivity
    });
    const extension = new PresenceExtension(presence => {
      presences.set(presence.widget, presence);
      if (!panel.presence || panel.presence.isDisposed) {
        panel.setDocument(presence);
      }
    }, openActivity);
    app.docRegistry.addWidgetExtension('Notebook', extension);
    app.docRegistry.addWidgetExtension('Editor', extension);
    const follow = (widget: object | null) => {
      const presence = widget ? presences.get(widget) : undefined;
      if (presence) {
        panel.setDocument(presence);
      }
    };
    notebooks?.currentChanged.connect((_, widget) => follow(widget));
    editors?.currentChanged.connect((_, widget) => follow(widget));
    app.restored
      .then(() => {
        // The panel is added at start only in JupyterLab (a restored layout may show it); Notebook 7 adds it
        // when the person opens it from the indicator.
        if (app.name === 'JupyterLab') {
          app.shell.add(panel, 'right', { rank: 900 });
          added = true;
        }
      })
      .catch(error => console.warn('jupyter-notebook-mcp:', error));
  }
};

export default plugin;
