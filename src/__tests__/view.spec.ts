import { parseGrants } from '../grantsmodel';
import { parseClaim, requestOf, SHOW_SCHEMA } from '../view';

describe('requestOf', () => {
  const event = { schema_id: SHOW_SCHEMA, request: '0a1b', to: 'alice' };

  it("takes the requests for this tab's user, or for anyone", () => {
    expect(requestOf(event, 'alice')).toBe('0a1b');
    expect(requestOf({ ...event, to: '' }, 'bob')).toBe('0a1b');
    // The identity is not known yet: the server decides on the claim.
    expect(requestOf(event, '')).toBe('0a1b');
  });

  it("leaves other people's requests, other events and malformed ones", () => {
    expect(requestOf(event, 'bob')).toBeNull();
    expect(requestOf({ ...event, schema_id: 'other' }, 'alice')).toBeNull();
    expect(requestOf({ ...event, request: '../x' }, 'alice')).toBeNull();
    expect(requestOf({ ...event, request: 7 }, 'alice')).toBeNull();
    expect(requestOf(null, 'alice')).toBeNull();
    expect(requestOf('junk', 'alice')).toBeNull();
  });
});

describe('parseClaim', () => {
  it('reads a claim, with or without a cell', () => {
    expect(
      parseClaim({ path: 'a.ipynb', cell_id: 'c1', ticket: 't', agent: 'x' })
    ).toEqual({ path: 'a.ipynb', cellId: 'c1', ticket: 't' });
    expect(parseClaim({ path: 'b.py', cell_id: null, ticket: 't' })).toEqual({
      path: 'b.py',
      cellId: null,
      ticket: 't'
    });
  });

  it('refuses an answer without a path or ticket', () => {
    expect(parseClaim({ path: 'a.ipynb' })).toBeNull();
    expect(parseClaim({ ticket: 't' })).toBeNull();
    expect(parseClaim(null)).toBeNull();
  });
});

describe('May move my view', () => {
  it('is read from a grant, off unless the server says true', () => {
    const [on, off, old] = parseGrants({
      grants: [
        { id: 'a1', created: 3, may_move_view: true },
        { id: 'a2', created: 2, may_move_view: 'yes' },
        { id: 'a3', created: 1 }
      ]
    });
    expect([on.mayMoveView, off.mayMoveView, old.mayMoveView]).toEqual([
      true,
      false,
      false
    ]);
  });
});
