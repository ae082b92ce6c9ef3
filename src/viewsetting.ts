/**
 * "May move my view": a grant's switch, in the "Connected agents" list, that lets its agent open documents and
 * bring cells into view in this person's JupyterLab (show_in_jupyterlab). Off by default; only the person
 * sets it (the server refuses an agent's token on api/mcp/grants).
 */
import { showErrorMessage } from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';

import { IGrant } from './grantsmodel';
import { setMayMoveView } from './view';

/** The labelled checkbox for `grant`; `changed` runs after the server took the change (or refused it). */
export function moveViewToggle(
  trans: TranslationBundle,
  grant: IGrant,
  changed: () => Promise<void>
): HTMLElement {
  const row = document.createElement('label');
  row.className = 'jp-mcp-grant-view';
  row.title = trans.__(
    'Let %1 open documents and bring cells into view in your JupyterLab',
    grant.clientName
  );
  const box = document.createElement('input');
  box.type = 'checkbox';
  box.className = 'jp-mcp-grant-view-toggle';
  box.checked = grant.mayMoveView;
  box.setAttribute(
    'aria-label',
    trans.__('%1 may move my view', grant.clientName)
  );
  box.addEventListener('change', () => {
    box.disabled = true;
    void setMayMoveView(grant.id, box.checked)
      .catch(error =>
        showErrorMessage(
          trans.__('May move my view'),
          error instanceof Error ? error.message : String(error)
        )
      )
      .then(changed);
  });
  row.append(box, ' ', trans.__('May move my view'));
  return row;
}
