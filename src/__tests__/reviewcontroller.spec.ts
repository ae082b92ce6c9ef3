/**
 * DocumentReview against a stubbed API: it draws pending changes on their cells, redraws only what changed,
 * sends Accept / Reject with the cells, polls only while the document is shown, and gives up (no UI, no
 * polls) on a server without the review API.
 */
import { Message, MessageLoop } from '@lumino/messaging';
import { Signal } from '@lumino/signaling';

import * as api from '../api';
import { DocumentPresence } from '../document';
import { DocumentReview, REVIEW_POLL } from '../review';
import { parseSuggestions } from '../suggestions';

// apputils' bundle is not loadable under jest (ES modules of its React components): only what review.ts uses.
jest.mock('@jupyterlab/apputils', () => ({
  MainAreaWidget: class {},
  showErrorMessage: jest.fn()
}));

jest.mock('../api', () => {
  const actual = jest.requireActual('../api');
  return {
    ApiError: actual.ApiError,
    fetchSuggestions: jest.fn(),
    decideSuggestion: jest.fn()
  };
});

const fetchSuggestions = api.fetchSuggestions as jest.Mock;
const decideSuggestion = api.decideSuggestion as jest.Mock;

function cell(id: string, source: string) {
  return {
    node: document.createElement('div'),
    model: { id, sharedModel: { getSource: () => source } }
  };
}

function fakePresence(cells: ReturnType<typeof cell>[]) {
  const owner = {};
  return {
    path: 'nb.ipynb',
    people: [] as unknown[],
    widget: { isVisible: true, processMessage: () => undefined },
    changed: new Signal<object, void>(owner),
    notebook: {
      widgets: cells,
      model: { cells: { changed: new Signal<object, void>(owner) } }
    },
    context: { model: null, ready: Promise.resolve() }
  } as unknown as DocumentPresence & { widget: { isVisible: boolean } };
}

const body = {
  path: 'nb.ipynb',
  suggestions: [
    {
      id: 's1',
      state: 'pending',
      agent: { key: 'k1', name: 'Agent One' },
      summary: 'tidy',
      cells: [
        {
          cell_id: 'c1',
          index: 0,
          change: 'update',
          before: 'x = 1',
          after: 'x = 2',
          state: 'pending'
        },
        {
          cell_id: 'n1',
          index: 1,
          change: 'insert',
          after: 'print(x)',
          state: 'pending'
        },
        {
          cell_id: 'c2',
          index: 2,
          change: 'delete',
          before: 'y',
          state: 'pending'
        }
      ]
    }
  ]
};

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await Promise.resolve();
  }
}

describe('DocumentReview', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    fetchSuggestions.mockReset();
    decideSuggestion.mockReset();
  });
  afterEach(() => jest.useRealTimers());

  it('draws each pending change on its cell and sends the person’s decisions', async () => {
    fetchSuggestions.mockResolvedValue(parseSuggestions(body));
    decideSuggestion.mockResolvedValue(null);
    const cells = [cell('c1', 'x = 1'), cell('c2', 'y')];
    const review = new DocumentReview(fakePresence(cells));
    await settle();
    const first = cells[0].node;
    const blocks = first.querySelectorAll<HTMLElement>(
      ':scope > .jp-mcp-suggestions > .jp-mcp-suggestion'
    );
    // The cell's own change, then the new cell that would follow it.
    expect(Array.from(blocks, b => b.dataset.cellId)).toEqual(['c1', 'n1']);
    expect(blocks[1].classList.contains('jp-mcp-ghost-cell')).toBe(true);
    expect(first.classList.contains('jp-mcp-suggested-cell')).toBe(true);
    expect(cells[1].node.classList.contains('jp-mcp-suggested-delete')).toBe(
      true
    );
    // A poll bringing nothing new leaves the blocks as they are.
    jest.advanceTimersByTime(REVIEW_POLL);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(2);
    expect(first.querySelector('.jp-mcp-suggestion')).toBe(blocks[0]);
    // Accept one cell: the request names it, then the list is read again.
    blocks[0]
      .querySelector<HTMLButtonElement>('.jp-mcp-suggestion-accept')!
      .click();
    fetchSuggestions.mockResolvedValue(parseSuggestions({ suggestions: [] }));
    await settle();
    await settle();
    expect(decideSuggestion).toHaveBeenCalledWith('s1', 'accept', ['c1']);
    expect(fetchSuggestions).toHaveBeenCalledTimes(3);
    expect(first.querySelector('.jp-mcp-suggestions')).toBeNull();
    expect(first.classList.contains('jp-mcp-suggested-cell')).toBe(false);
    expect(cells[1].node.classList.contains('jp-mcp-suggested-delete')).toBe(
      false
    );
    review.dispose();
  });

  it('lists changes with no cell to show on above the notebook, with Accept all and Reject all', async () => {
    fetchSuggestions.mockResolvedValue(parseSuggestions(body));
    decideSuggestion.mockResolvedValue(null);
    // The person deleted c1 since, and c2 is not there either: nothing to draw on but the new cell's anchor.
    const cells = [cell('other', '')];
    const review = new DocumentReview(fakePresence(cells));
    await settle();
    const list = (review as unknown as { _list: HTMLElement })._list;
    const orphan = list.querySelector<HTMLElement>(
      '.jp-mcp-suggestion-orphan[data-mcp-suggestion-id="s1"]'
    )!;
    expect(orphan.querySelectorAll('.jp-mcp-suggestion-diff')).toHaveLength(2);
    expect(
      Array.from(orphan.querySelectorAll('button'), b => b.textContent)
    ).toEqual(['Accept all', 'Reject all']);
    // The new cell still shows, after the only live cell.
    expect(
      cells[0].node.querySelector('.jp-mcp-suggestion[data-cell-id="n1"]')
    ).not.toBeNull();
    orphan
      .querySelector<HTMLButtonElement>('.jp-mcp-suggestion-reject-all')!
      .click();
    fetchSuggestions.mockResolvedValue(parseSuggestions({ suggestions: [] }));
    await settle();
    await settle();
    expect(decideSuggestion).toHaveBeenCalledWith('s1', 'reject', undefined);
    expect(list.children).toHaveLength(0);
    review.dispose();
  });

  it('asks again soon when an agent acts, not when people move their carets', async () => {
    fetchSuggestions.mockResolvedValue(parseSuggestions({ suggestions: [] }));
    const presence = fakePresence([cell('c1', '')]);
    const changed = presence.changed as Signal<object, void>;
    const review = new DocumentReview(presence);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(1);
    (presence as unknown as { people: unknown[] }).people = [
      { kind: 'agent', key: 'k1', cellId: 'c1', status: null, message: null }
    ];
    changed.emit();
    jest.advanceTimersByTime(400);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(2);
    // A person's caret moved: the agents' part is the same.
    (presence as unknown as { people: unknown[] }).people.push({
      kind: 'person',
      key: 'ada'
    });
    changed.emit();
    jest.advanceTimersByTime(400);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(2);
    review.dispose();
  });

  it('asks once more when asked during a fetch (after a decision)', async () => {
    let answer: (value: unknown) => void = () => undefined;
    fetchSuggestions.mockReturnValueOnce(
      new Promise(resolve => (answer = resolve))
    );
    fetchSuggestions.mockResolvedValue(parseSuggestions({ suggestions: [] }));
    const review = new DocumentReview(fakePresence([cell('c1', '')]));
    void review.refresh();
    void review.refresh();
    expect(fetchSuggestions).toHaveBeenCalledTimes(1);
    answer(parseSuggestions(body));
    await settle();
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(2);
    expect(review.suggestions).toEqual([]);
    review.dispose();
  });

  it('polls only while the document is shown, and stops when disposed', async () => {
    fetchSuggestions.mockResolvedValue(parseSuggestions({ suggestions: [] }));
    const presence = fakePresence([cell('c1', '')]);
    const review = new DocumentReview(presence);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(1);
    presence.widget.isVisible = false;
    jest.advanceTimersByTime(REVIEW_POLL * 3);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(1);
    presence.widget.isVisible = true;
    // Shown again: asked at once, not at the next poll.
    MessageLoop.sendMessage(
      presence.widget as never,
      new Message('after-show')
    );
    jest.advanceTimersByTime(1);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(2);
    jest.advanceTimersByTime(REVIEW_POLL);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(3);
    review.dispose();
    jest.advanceTimersByTime(REVIEW_POLL * 3);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(3);
  });

  it('shows nothing and stops asking on a server without the review API', async () => {
    fetchSuggestions.mockRejectedValue(new api.ApiError('Not Found', 404));
    const cells = [cell('c1', '')];
    const review = new DocumentReview(fakePresence(cells));
    await settle();
    jest.advanceTimersByTime(REVIEW_POLL * 5);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(1);
    expect(cells[0].node.querySelector('.jp-mcp-suggestions')).toBeNull();
    review.dispose();
  });

  it('keeps asking after a refusal the server explained', async () => {
    fetchSuggestions.mockRejectedValue(
      new api.ApiError('no such document', 404, true)
    );
    const review = new DocumentReview(fakePresence([cell('c1', '')]));
    await settle();
    jest.advanceTimersByTime(REVIEW_POLL);
    await settle();
    expect(fetchSuggestions).toHaveBeenCalledTimes(2);
    review.dispose();
  });
});
