/**
 * Every string the extension shows goes through JupyterLab's translator: with a translator that marks what
 * it translates, each label, title, accessible name and note of the review blocks, the participants'
 * descriptions and the parsers' fallbacks come out marked (names, summaries and code stay as they are).
 */
import { ITranslator, TranslationBundle } from '@jupyterlab/translation';

import { DOMAIN, setTranslator } from '../i18n';
import { describe as describeParticipant, IParticipant } from '../model';
import { parseActivity } from '../rest';
import {
  cellBlock,
  diffNode,
  staleNote,
  textBlock,
  orphanBlock
} from '../reviewdom';
import { parseSuggestion } from '../suggestions';

function fill(text: string, args: unknown[]): string {
  return args.reduce<string>(
    (out, arg, i) => out.split(`%${i + 1}`).join(String(arg)),
    text
  );
}

/** A translator into "«…»": what went through it is marked. */
const domains: string[] = [];
const marking = {
  languageCode: 'xx',
  load(domain: string): TranslationBundle {
    domains.push(domain);
    const mark = (text: string, args: unknown[]) => `«${fill(text, args)}»`;
    return {
      __: (msgid: string, ...args: unknown[]) => mark(msgid, args),
      _n: (one: string, many: string, n: number, ...args: unknown[]) =>
        mark(n === 1 ? one : many, [n, ...args]),
      _p: (_c: string, msgid: string, ...args: unknown[]) => mark(msgid, args),
      _np: (
        _c: string,
        one: string,
        many: string,
        n: number,
        ...args: unknown[]
      ) => mark(n === 1 ? one : many, [n, ...args])
    } as unknown as TranslationBundle;
  }
} as unknown as ITranslator;

const marked = (text: string | null | undefined) =>
  expect(text ?? '').toMatch(/^«.*»$/s);

beforeAll(() => setTranslator(marking));
afterAll(() => setTranslator(null));

const s = parseSuggestion({
  id: 's',
  agent: { key: 'k', name: 'Agent', client: 'cli' },
  summary: 'sum',
  cells: [
    { cell_id: 'c1', change: 'update', before: 'a', after: 'b', cut: true },
    { cell_id: 'n1', change: 'insert', cell_type: 'markdown', after: '# T' },
    { cell_id: 'd1', change: 'delete', before: 'gone' }
  ]
})!;

function everyLabel(node: HTMLElement): void {
  marked(node.getAttribute('aria-label'));
  for (const button of Array.from(node.querySelectorAll('button'))) {
    marked(button.textContent);
    marked(button.title);
  }
  for (const kind of Array.from(
    node.querySelectorAll('.jp-mcp-suggestion-kind')
  )) {
    marked(kind.textContent);
  }
  for (const note of Array.from(
    node.querySelectorAll('.jp-mcp-suggestion-note')
  )) {
    marked(note.textContent);
  }
  marked(node.querySelector('.jp-mcp-suggestion-agent')!.getAttribute('title'));
  // what people and agents wrote stays as it is
  expect(node.querySelector('.jp-mcp-suggestion-agent')!.textContent).toBe(
    'Agent'
  );
}

describe('the translator', () => {
  it('loads the extension’s domain', () => {
    expect(domains).toContain(DOMAIN);
  });

  it('translates every label of a cell’s, a file’s and an orphan’s block', () => {
    for (const [cell, live] of [
      [s.cells[0], 'a and more'],
      [s.cells[1], null],
      [s.cells[2], 'gone']
    ] as const) {
      const node = cellBlock(s, cell, live, () => undefined, false, 'code');
      everyLabel(node);
    }
    const stale = cellBlock(s, s.cells[2], 'gone, edited', () => undefined);
    expect(stale.querySelectorAll('.jp-mcp-suggestion-note').length).toBe(1);
    everyLabel(stale);
    const text = parseSuggestion({
      id: 't',
      agent: { name: 'Agent', client: 'cli' },
      text: { before: 'x\n', after: 'y\n' }
    })!;
    everyLabel(textBlock(text, 'x\nz\n', () => undefined));
    everyLabel(orphanBlock(s, s.cells, () => undefined));
    for (const conflicts of [true, false]) {
      marked(staleNote(conflicts, 'cell'));
      marked(staleNote(conflicts, 'file'));
    }
  });

  it('translates the diff’s notes but not its lines', () => {
    const empty = diffNode([]);
    marked(empty.textContent);
    const lines = Array.from({ length: 401 }, () => ({
      kind: 'add' as const,
      text: 'x'
    }));
    const long = diffNode(lines);
    marked(long.querySelector('.jp-mcp-diff-more')!.textContent);
    expect(long.querySelector('.jp-mcp-diff-add')!.textContent).toBe('x');
  });

  it('translates the parsers’ fallbacks and the participants’ descriptions', () => {
    marked(parseSuggestion({ id: 'x', cells: [] })!.agentName);
    const activity = parseActivity({
      entries: [{ seq: 1, time: 't', kind: 'edit', summary: 's' }]
    });
    marked(activity.entries[0].agentName);
    const agent: IParticipant = {
      kind: 'agent',
      key: 'k',
      username: 'mcp-agent-k',
      name: 'Agent',
      color: '#000',
      client: 'cli',
      clientIds: [1],
      isSelf: false
    } as unknown as IParticipant;
    expect(describeParticipant(agent)).toContain('«AI agent (');
    const person = {
      ...agent,
      kind: 'person',
      username: 'alice',
      isSelf: true,
      clientIds: [1, 2]
    } as unknown as IParticipant;
    expect(describeParticipant(person)).toContain('«you»');
    expect(describeParticipant(person)).toContain('«2 windows»');
  });
});
