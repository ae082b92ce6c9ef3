/**
 * The reviewAgents setting reaches the server at start and on each change; a server without the review
 * API is no error.
 */
import { Signal } from '@lumino/signaling';

import * as api from '../api';
import { followReviewSetting, PLUGIN_ID } from '../settings';

jest.mock('../api', () => {
  const actual = jest.requireActual('../api');
  return { ApiError: actual.ApiError, setReview: jest.fn() };
});

const setReview = api.setReview as jest.Mock;

describe('followReviewSetting', () => {
  it('pushes the setting at start and when it changes', async () => {
    setReview.mockResolvedValue({});
    let composite: unknown = undefined;
    // Settings emit `changed` as their own sender, which the slot reads.
    const value: Record<string, unknown> = {
      get: (key: string) => ({
        composite: key === 'reviewAgents' ? composite : null
      })
    };
    const changed = new Signal<object, void>(value);
    value.changed = changed;
    const load = jest.fn().mockResolvedValue(value);
    await followReviewSetting({ load } as never);
    expect(load).toHaveBeenCalledWith(PLUGIN_ID);
    composite = true;
    changed.emit();
    composite = false;
    changed.emit();
    expect(setReview.mock.calls).toEqual([[false], [true], [false]]);
  });

  it('says nothing about a server without the review API', async () => {
    const warn = jest
      .spyOn(console, 'warn')
      .mockImplementation(() => undefined);
    setReview.mockRejectedValue(new api.ApiError('Not Found', 404));
    const value = { get: () => ({ composite: true }), changed: new Signal({}) };
    await followReviewSetting({ load: async () => value } as never);
    await Promise.resolve();
    expect(warn).not.toHaveBeenCalled();
    warn.mockRestore();
  });
});
