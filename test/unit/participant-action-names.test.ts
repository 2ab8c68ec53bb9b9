import { hash } from 'node:crypto';
import fc from 'fast-check';
import { canonicalJson } from '../../src/core/canonical-json';
import { MAX_NAME_LENGTH, isValidActionName } from '../../src/core/naming';
import {
  actionNamesFor,
  defaultHttpLevel,
  defaultMcpLevel,
  definitionDigest,
} from '../../src/participants/action-names';

const digest6 = (name: string) => hash('sha256', name, 'hex').slice(0, 6);

describe('actionNamesFor', () => {
  it.each([
    ['read_file', 'read-file'],
    ['createEntities', 'create-entities'],
    ['getUserByID', 'get-user-by-id'],
    ['HTTPRequest', 'http-request'],
    ['echo', 'echo'],
    ['GET /pets/{petId}', 'get-pets-pet-id'],
    ['POST /v2/users.create', 'post-v2-users-create'],
    ['  spaced   name  ', 'spaced-name'],
    ['a__b--c', 'a-b-c'],
    ['2fa_check', 'x-2fa-check'],
  ])('%j → %j', (upstream, action) => {
    expect(actionNamesFor([upstream]).get(upstream)).toBe(action);
  });

  it('gives every name of a colliding group a suffix, except the one that is its own kebab form', () => {
    const names = actionNamesFor(['read_file', 'readFile', 'read-file']);
    expect(names.get('read-file')).toBe('read-file');
    expect(names.get('read_file')).toBe(`read-file-${digest6('read_file')}`);
    expect(names.get('readFile')).toBe(`read-file-${digest6('readFile')}`);
  });

  it('suffixes all of a colliding group when none is its own kebab form', () => {
    const names = actionNamesFor(['read_file', 'readFile']);
    expect(names.get('read_file')).toBe(`read-file-${digest6('read_file')}`);
    expect(names.get('readFile')).toBe(`read-file-${digest6('readFile')}`);
  });

  it('truncates a long name and adds a suffix, keeping it within MAX_NAME_LENGTH', () => {
    const long = 'get_all_the_things_from_the_remote_server_please';
    const action = actionNamesFor([long]).get(long)!;
    expect(action).toBe(`get-all-the-things-from-${digest6(long)}`);
    expect(action.length).toBeLessThanOrEqual(MAX_NAME_LENGTH);
    expect(isValidActionName(action)).toBe(true);
  });

  it('gives empty and reserved names a suffix', () => {
    const names = actionNamesFor(['日本語', 'list_tools', '!!']);
    expect(names.get('日本語')).toBe(`action-${digest6('日本語')}`);
    expect(names.get('!!')).toBe(`action-${digest6('!!')}`);
    expect(names.get('list_tools')).toBe(`list-tools-${digest6('list_tools')}`);
  });

  it('keeps a name whose kebab form is the empty-name base when nothing collides (`Action` → `action`)', () => {
    const names = actionNamesFor(['Action', '!!']);
    expect(names.get('Action')).toBe('action');
    expect(names.get('!!')).toBe(`action-${digest6('!!')}`);
  });

  it('takes more digits when a suffixed name is already taken by a plain one', () => {
    const taken = `read-file-${digest6('read_file')}`;
    const names = actionNamesFor(['read_file', 'readFile', taken]);
    expect(names.get(taken)).toBe(taken);
    expect(names.get('read_file')).toBe(`read-file-${hash('sha256', 'read_file', 'hex').slice(0, 8)}`);
  });

  it('maps each distinct name once (duplicates in the input are one entry)', () => {
    expect([...actionNamesFor(['echo', 'echo', 'add']).entries()]).toEqual([
      ['add', 'add'],
      ['echo', 'echo'],
    ]);
  });

  const upstreamName = fc.oneof(
    fc.string({ maxLength: 60 }),
    fc.stringMatching(/^[a-zA-Z_ ./{}-]{0,50}$/),
    fc.constantFrom('read_file', 'readFile', 'read-file', 'list_tools', 'GET /a/{b}', 'get-a-b', ''),
  );

  it('property: valid, unique, reversible and independent of the input order', () => {
    fc.assert(
      fc.property(fc.array(upstreamName, { maxLength: 25 }), fc.nat(), (list, seed) => {
        const names = actionNamesFor(list);
        const actions = [...names.values()];
        expect(names.size).toBe(new Set(list).size);
        for (const action of actions) expect(isValidActionName(action)).toBe(true);
        expect(new Set(actions).size).toBe(actions.length);
        const shuffled = [...list].sort(() => 0).reverse();
        shuffled.push(...shuffled.splice(0, seed % (shuffled.length + 1)));
        expect(sortedEntries(actionNamesFor(shuffled))).toEqual(sortedEntries(names));
      }),
      { numRuns: 300 },
    );
  });
});

describe('definitionDigest', () => {
  it('is the SHA-256 of the canonical JSON, independent of key order', () => {
    const a = { name: 'echo', inputSchema: { type: 'object', properties: { m: { type: 'string' } } } };
    const b = { inputSchema: { properties: { m: { type: 'string' } }, type: 'object' }, name: 'echo' };
    expect(definitionDigest(a)).toBe(hash('sha256', canonicalJson(a), 'hex'));
    expect(definitionDigest(a)).toBe(definitionDigest(b));
    expect(definitionDigest(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('changes when the definition changes', () => {
    expect(definitionDigest({ description: 'Echo' })).not.toBe(definitionDigest({ description: 'Echo!' }));
  });
});

describe('default levels', () => {
  it.each([
    [{ readOnlyHint: true }, 1],
    [{ readOnlyHint: true, destructiveHint: true }, 1],
    [{ destructiveHint: false }, 2],
    [{ readOnlyHint: false, destructiveHint: false }, 2],
    [{ destructiveHint: true }, 3],
    [{}, 3],
    [undefined, 3],
    [null, 3],
    ['readOnly', 3],
    [{ readOnlyHint: 'true' }, 3],
  ])('MCP annotations %j → %d', (annotations, level) => {
    expect(defaultMcpLevel(annotations)).toBe(level);
  });

  it.each([
    ['GET', 1],
    ['head', 1],
    ['DELETE', 3],
    ['POST', 2],
    ['put', 2],
    ['PATCH', 2],
    ['OPTIONS', 2],
  ])('HTTP %s → %d', (method, level) => {
    expect(defaultHttpLevel(method)).toBe(level);
  });
});

function sortedEntries(map: Map<string, string>): [string, string][] {
  return [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
