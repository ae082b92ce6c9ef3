import { foldersOf, parseGrants, parseMinted, when } from '../grantsmodel';

const GRANT = {
  id: 'a1b2',
  client_id: 'c',
  client_name: 'Claude',
  person: '0f0f',
  person_name: 'Alice',
  level: 'write',
  folders: ['work', 'data'],
  propose_only: true,
  created: 100,
  expires: 200,
  last_used: 150,
  headless: false
};

describe('parseGrants', () => {
  it('reads grants newest first, skipping ones without an id', () => {
    const grants = parseGrants({
      grants: [
        GRANT,
        { ...GRANT, id: 'ff', created: 300, folders: [''], person_name: '' },
        { ...GRANT, id: 'not hex' },
        { ...GRANT, id: 'ee', created: 50, granted_by: "the server's owner" },
        'junk'
      ]
    });
    expect(grants.map(g => g.id)).toEqual(['ff', 'a1b2', 'ee']);
    expect(grants[2].person).toBe("the server's owner");
    expect(grants[0].folders).toEqual([]); // the whole server
    expect(grants[0].person).toBe('0f0f');
    expect(grants[1]).toMatchObject({
      clientName: 'Claude',
      person: 'Alice',
      level: 'write',
      folders: ['work', 'data'],
      proposeOnly: true,
      headless: false,
      lastUsed: 150
    });
  });

  it('gives an empty list for an answer of another shape', () => {
    expect(parseGrants(null)).toEqual([]);
    expect(parseGrants({ grants: 'x' })).toEqual([]);
  });
});

describe('parseMinted', () => {
  it('reads the token and the command lines in a fixed order', () => {
    const minted = parseMinted({
      grant: { ...GRANT, headless: true },
      token: 'jpmcp_at_x',
      url: 'http://h/mcp',
      commands: { http_json: '{}', claude: 'claude mcp add', other: 'x' }
    });
    expect(minted?.token).toBe('jpmcp_at_x');
    expect(minted?.grant.headless).toBe(true);
    expect(minted?.commands.map(c => c.text)).toEqual(['claude mcp add', '{}']);
  });

  it('is null without a token', () => {
    expect(parseMinted({ grant: GRANT })).toBeNull();
  });
});

describe('helpers', () => {
  it('reads folders one per line', () => {
    expect(foldersOf(' work \n\n data/x\n')).toEqual(['work', 'data/x']);
    expect(foldersOf('  ')).toEqual([]);
  });

  it('says nothing for a time never reached', () => {
    expect(when(0)).toBe('');
    expect(when(1_800_000_000)).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/);
  });
});
