/**
 * The person's review setting: `reviewAgents` in the extension's settings (schema/plugin.json), pushed to
 * the server (PUT api/mcp/review) at start and on each change, since the server decides, per identity,
 * whether an agent's edit lands or waits for review.
 */
import type { ISettingRegistry } from '@jupyterlab/settingregistry';

import { ApiError, setReview } from './api';

/** The extension's plugin id; its settings schema is schema/plugin.json. */
export const PLUGIN_ID = 'jupyter-pair-mcp:plugin';

/** Load the settings, push `reviewAgents` now and on each change. Resolves once the first push is sent. */
export async function followReviewSetting(
  settings: Pick<ISettingRegistry, 'load'>
): Promise<void> {
  const push = (value: ISettingRegistry.ISettings) => {
    const enabled = value.get('reviewAgents').composite === true;
    setReview(enabled).catch(error => {
      // A server without the review API (404) has nothing to switch.
      if (!(error instanceof ApiError && error.status === 404)) {
        console.warn('jupyter-pair-mcp: review setting:', error);
      }
    });
  };
  try {
    const value = await settings.load(PLUGIN_ID);
    push(value);
    value.changed.connect(push);
  } catch (error) {
    console.warn('jupyter-pair-mcp: settings not loaded:', error);
  }
}
