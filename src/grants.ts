/**
 * "Connected agents": the person's grants (docs/authorization.md) at the foot of the activity panel, each with
 * who approved it, its level, folders, "propose only", when it was made and last used and when it expires, and
 * a Revoke button (after a confirmation); and a button that mints a grant for a headless agent, whose token is
 * shown once with the command lines that configure clients with it.
 *
 * Every string goes through JupyterLab's translator. Buttons are native <button>s (keyboard reachable) with
 * labels naming the grant they act on.
 */
import {
  Clipboard,
  Dialog,
  showDialog,
  showErrorMessage
} from '@jupyterlab/apputils';
import { TranslationBundle } from '@jupyterlab/translation';
import { Widget } from '@lumino/widgets';

import { ApiError, fetchGrants, mintGrant, revokeGrant } from './api';
import { moveViewToggle } from './viewsetting';
import {
  foldersOf,
  IGrant,
  IMinted,
  IMintRequest,
  MINT_EXPIRY_DAYS,
  when
} from './grantsmodel';

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text = ''
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text) {
    node.textContent = text;
  }
  return node;
}

/** The section: a heading, the mint button, the list. */
export class GrantsView {
  readonly node: HTMLElement;

  constructor(private readonly _trans: TranslationBundle) {
    const trans = this._trans;
    this.node = element('section', 'jp-mcp-grants');
    this.node.setAttribute('aria-labelledby', 'jp-mcp-grants-title');
    const head = element('div', 'jp-mcp-grants-head');
    const title = element(
      'h3',
      'jp-mcp-grants-title',
      trans.__('Connected agents')
    );
    title.id = 'jp-mcp-grants-title';
    const mint = element(
      'button',
      'jp-mcp-grants-mint',
      trans.__('New token…')
    );
    mint.type = 'button';
    mint.title = trans.__(
      'Make a token for a headless agent (CI, a script): shown once, with the command lines that use it'
    );
    mint.addEventListener('click', () => void this._mint());
    head.append(title, mint);
    this._status = element('div', 'jp-mcp-grants-status');
    this._status.setAttribute('aria-live', 'polite');
    this._list = element('ul', 'jp-mcp-grants-list');
    this._list.setAttribute('aria-labelledby', 'jp-mcp-grants-title');
    this.node.append(head, this._status, this._list);
  }

  /** Fetch the grants again (hidden on a server without them). */
  async refresh(): Promise<void> {
    if (this._loading) {
      return;
    }
    this._loading = true;
    try {
      this._grants = await fetchGrants();
      this._error = '';
      this.node.hidden = false;
    } catch (error) {
      if (
        error instanceof ApiError &&
        error.status === 404 &&
        !error.explained
      ) {
        this.node.hidden = true; // grants are off (enable_grants) or the server is older
      }
      this._error = error instanceof Error ? error.message : String(error);
    } finally {
      this._loading = false;
    }
    this._render();
  }

  private _render(): void {
    const trans = this._trans;
    this._status.textContent = this._error
      ? trans.__('Grants could not be read: %1', this._error)
      : this._grants.length
        ? ''
        : trans.__('No agent holds a grant of yours.');
    this._list.textContent = '';
    for (const grant of this._grants) {
      this._list.appendChild(this._item(grant));
    }
  }

  private _item(grant: IGrant): HTMLElement {
    const trans = this._trans;
    const item = element('li', 'jp-mcp-grant');
    item.dataset.mcpGrantId = grant.id;
    const name = element('div', 'jp-mcp-grant-name', grant.clientName);
    const kind = element(
      'span',
      'jp-mcp-grant-kind',
      grant.headless ? trans.__('token') : trans.__('connected')
    );
    name.append(' ', kind);
    const facts = element('dl', 'jp-mcp-grant-facts');
    const fact = (label: string, value: string, key: string) => {
      const term = element('dt', '', label);
      const detail = element('dd', `jp-mcp-grant-${key}`, value);
      facts.append(term, detail);
    };
    fact(trans.__('Granted by'), grant.person || trans.__('you'), 'person');
    fact(trans.__('Level'), grant.level, 'level');
    fact(
      trans.__('Where'),
      grant.folders.length
        ? grant.folders.join(', ')
        : trans.__('the whole server'),
      'folders'
    );
    if (grant.proposeOnly) {
      fact(trans.__('Edits'), trans.__('propose only'), 'propose');
    }
    fact(trans.__('Created'), when(grant.created), 'created');
    fact(
      trans.__('Last used'),
      when(grant.lastUsed) || trans.__('never'),
      'used'
    );
    fact(trans.__('Expires'), when(grant.expires), 'expires');
    const revoke = element('button', 'jp-mcp-grant-revoke', trans.__('Revoke'));
    revoke.type = 'button';
    revoke.setAttribute(
      'aria-label',
      trans.__('Revoke the grant of %1', grant.clientName)
    );
    revoke.addEventListener('click', () => void this._revoke(grant));
    item.append(
      name,
      facts,
      moveViewToggle(trans, grant, () => this.refresh()),
      revoke
    );
    return item;
  }

  private async _revoke(grant: IGrant): Promise<void> {
    const trans = this._trans;
    const result = await showDialog({
      title: trans.__('Revoke grant'),
      body: trans.__(
        'Revoke the grant of %1? Its token stops working, and its sessions and runs end at once.',
        grant.clientName
      ),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.warnButton({ label: trans.__('Revoke') })
      ]
    });
    if (!result.button.accept) {
      return;
    }
    try {
      await revokeGrant(grant.id);
    } catch (error) {
      await showErrorMessage(
        trans.__('Revoke grant'),
        error instanceof Error ? error.message : String(error)
      );
    }
    await this.refresh();
  }

  private async _mint(): Promise<void> {
    const trans = this._trans;
    const result = await showDialog({
      title: trans.__('New token for a headless agent'),
      body: new MintForm(trans),
      buttons: [
        Dialog.cancelButton({ label: trans.__('Cancel') }),
        Dialog.okButton({ label: trans.__('Create token') })
      ],
      focusNodeSelector: 'input'
    });
    if (!result.button.accept || !result.value) {
      return;
    }
    let minted: IMinted;
    try {
      minted = await mintGrant(result.value);
    } catch (error) {
      await showErrorMessage(
        trans.__('New token for a headless agent'),
        error instanceof Error ? error.message : String(error)
      );
      return;
    }
    await this.refresh();
    await showDialog({
      title: trans.__('Token for %1', minted.grant.clientName),
      body: new MintedView(trans, minted),
      buttons: [Dialog.okButton({ label: trans.__('Done') })]
    });
  }

  private _grants: IGrant[] = [];
  private _error = '';
  private _loading = false;
  private _status: HTMLElement;
  private _list: HTMLElement;
}

/** The mint form: name, level, folders, expiry, "propose only". */
class MintForm extends Widget implements Dialog.IBodyWidget<IMintRequest> {
  constructor(trans: TranslationBundle) {
    super();
    this.addClass('jp-mcp-mint-form');
    const field = (label: string, control: HTMLElement, id: string) => {
      control.id = id;
      const caption = element('label', '', label);
      caption.htmlFor = id;
      const row = element('div', 'jp-mcp-mint-field');
      row.append(caption, control);
      this.node.appendChild(row);
    };
    this._name = element('input', 'jp-mod-styled jp-mcp-mint-name');
    this._name.value = 'ci-bot';
    this._name.maxLength = 64;
    field(trans.__('Name people see'), this._name, 'jp-mcp-mint-name');
    this._level = element('select', 'jp-mod-styled jp-mcp-mint-level');
    for (const [value, label] of [
      ['read', trans.__('read: read notebooks and files')],
      ['write', trans.__('write: also edit and create them')],
      ['execute', trans.__('execute: also run code in kernels')]
    ]) {
      const option = element('option', '', label);
      option.value = value;
      this._level.appendChild(option);
    }
    field(trans.__('What it may do'), this._level, 'jp-mcp-mint-level');
    this._folders = element('textarea', 'jp-mod-styled jp-mcp-mint-folders');
    this._folders.rows = 2;
    this._folders.placeholder = trans.__('empty: the whole server');
    field(
      trans.__('Only these folders (one per line)'),
      this._folders,
      'jp-mcp-mint-folders'
    );
    this._expires = element('select', 'jp-mod-styled jp-mcp-mint-expires');
    for (const days of MINT_EXPIRY_DAYS) {
      const option = element('option', '', trans._n('%1 day', '%1 days', days));
      option.value = String(days * 86400);
      option.selected = days === 30;
      this._expires.appendChild(option);
    }
    field(trans.__('Expires after'), this._expires, 'jp-mcp-mint-expires');
    this._propose = element('input', 'jp-mcp-mint-propose');
    this._propose.type = 'checkbox';
    field(
      trans.__(
        'Propose only: every edit becomes a suggestion you accept or reject'
      ),
      this._propose,
      'jp-mcp-mint-propose'
    );
  }

  getValue(): IMintRequest {
    return {
      name: this._name.value.trim(),
      level: this._level.value,
      folders: foldersOf(this._folders.value),
      expires: Number(this._expires.value),
      propose_only: this._propose.checked
    };
  }

  private _name: HTMLInputElement;
  private _level: HTMLSelectElement;
  private _folders: HTMLTextAreaElement;
  private _expires: HTMLSelectElement;
  private _propose: HTMLInputElement;
}

/** The token, shown this once, and the command lines that use it, each with a copy button. */
class MintedView extends Widget {
  constructor(trans: TranslationBundle, minted: IMinted) {
    super();
    this.addClass('jp-mcp-minted');
    this.node.appendChild(
      element(
        'p',
        'jp-mcp-minted-warning',
        trans.__(
          'This token is shown once: copy it now and keep it like a password. Revoke it from this panel.'
        )
      )
    );
    const block = (label: string, text: string, key: string) => {
      const row = element('div', `jp-mcp-minted-block jp-mcp-minted-${key}`);
      const id = `jp-mcp-minted-${key}`;
      const caption = element('label', '', label);
      caption.htmlFor = id;
      const value = element('textarea', 'jp-mod-styled jp-mcp-minted-value');
      value.id = id;
      value.readOnly = true;
      value.value = text;
      value.rows = Math.min(10, text.split('\n').length);
      const copy = element('button', 'jp-mcp-minted-copy', trans.__('Copy'));
      copy.type = 'button';
      copy.setAttribute('aria-label', trans.__('Copy: %1', label));
      copy.addEventListener('click', () => {
        Clipboard.copyToSystem(text);
        copy.textContent = trans.__('Copied');
      });
      row.append(caption, value, copy);
      this.node.appendChild(row);
    };
    block(trans.__('Token'), minted.token, 'token');
    const labels: Record<string, string> = {
      claude: trans.__('Claude Code'),
      mcp_remote: trans.__(
        'mcp-remote (Claude Desktop and other stdio clients)'
      ),
      http_json: trans.__(
        'Clients that take an HTTP URL and headers (VS Code, Cursor)'
      )
    };
    for (const command of minted.commands) {
      block(
        labels[command.key] ?? command.key,
        command.text,
        command.key.replace('_', '-')
      );
    }
  }
}
