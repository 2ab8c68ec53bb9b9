import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  SealedValueError,
  SecretBox,
  SecretsKeyMismatchError,
  checkFingerprint,
  loadSecretsKey,
} from '../../src/participants/secrets';
import { type ScratchDir, scratchDir } from '../support/scratch-dir';

const ROOT = resolve(__dirname, '../..');
const key = () => randomBytes(32);

describe('SecretBox', () => {
  const box = SecretBox.fromKey(key());
  const value = { headers: { Authorization: 'Bearer s3cr3t-token' }, n: 1, list: [true, null] };

  it('opens what it sealed', () => {
    expect(box.open(box.seal(value))).toEqual(value);
    expect(box.open<string>(box.seal('plain'))).toBe('plain');
  });

  it('seals to versioned text without the plaintext, with a fresh IV each time', () => {
    const a = box.seal(value);
    const b = box.seal(value);
    expect(a).toMatch(/^v1:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    expect(Buffer.from(a.slice(3), 'base64').subarray(0, 12)).not.toEqual(
      Buffer.from(b.slice(3), 'base64').subarray(0, 12),
    );
    expect(a).not.toContain('s3cr3t');
    expect(Buffer.from(a.slice(3), 'base64').toString('latin1')).not.toContain('s3cr3t');
  });

  it('detects tampering anywhere in the sealed bytes', () => {
    const bytes = Buffer.from(box.seal(value).slice(3), 'base64');
    for (const at of [0, 11, 12, 27, 28, bytes.length - 1]) {
      const altered = Buffer.from(bytes);
      altered[at] = altered[at]! ^ 1;
      expect(() => box.open(`v1:${altered.toString('base64')}`)).toThrow(SealedValueError);
    }
    expect(() => box.open(`v1:${bytes.subarray(0, bytes.length - 1).toString('base64')}`)).toThrow(SealedValueError);
  });

  it('refuses another key with a message naming SECRETS_KEY and no secret', () => {
    const sealed = box.seal(value);
    let err: unknown;
    try {
      SecretBox.fromKey(key()).open(sealed);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SealedValueError);
    expect((err as Error).message).toContain('SECRETS_KEY');
    expect((err as Error).message).not.toContain('s3cr3t');
  });

  it('refuses unknown formats', () => {
    for (const bad of ['', 'v2:AAAA', 'v1:not base64!', 'v1:AAAA', box.seal(value).slice(3)]) {
      expect(() => box.open(bad)).toThrow(SealedValueError);
    }
  });

  it('refuses what JSON cannot hold, and keys that are not 32 bytes', () => {
    expect(() => box.seal(undefined)).toThrow(TypeError);
    expect(() => SecretBox.fromKey(randomBytes(16))).toThrow(TypeError);
  });

  it('has a fingerprint that identifies the key without being it', () => {
    const k = key();
    const fp = SecretBox.fromKey(k).fingerprint;
    expect(fp).toMatch(/^[0-9a-f]{16}$/);
    expect(SecretBox.fromKey(Buffer.from(k)).fingerprint).toBe(fp);
    expect(SecretBox.fromKey(key()).fingerprint).not.toBe(fp);
    expect(k.toString('hex')).not.toContain(fp);
  });
});

describe('checkFingerprint', () => {
  const box = SecretBox.fromKey(key());

  it('passes when nothing is stored or the fingerprints agree', () => {
    expect(() => checkFingerprint(undefined, box)).not.toThrow();
    expect(() => checkFingerprint(box.fingerprint, box)).not.toThrow();
  });

  it('throws SecretsKeyMismatchError naming SECRETS_KEY when they differ', () => {
    const other = SecretBox.fromKey(key());
    expect(() => checkFingerprint(other.fingerprint, box)).toThrow(SecretsKeyMismatchError);
    expect(() => checkFingerprint(other.fingerprint, box)).toThrow(/SECRETS_KEY/);
  });
});

describe('loadSecretsKey', () => {
  let dir: ScratchDir;
  beforeEach(() => (dir = scratchDir('secrets-key')));
  afterEach(() => dir.remove());

  it('takes SECRETS_KEY when set', async () => {
    const k = key();
    const loaded = await loadSecretsKey({ secretsKey: k.toString('base64'), dataDir: dir.path });
    expect(loaded).toEqual({ key: k, source: 'env' });
    expect(readdirSync(dir.path)).toEqual([]);
  });

  it.each([
    ['too short', randomBytes(16).toString('base64')],
    ['too long', randomBytes(48).toString('base64')],
    ['not base64', 'correct horse battery staple!!correct horse battery'],
    ['empty', ''],
  ])('refuses a SECRETS_KEY that is %s, naming the variable and not its value', async (_, value) => {
    const err = await loadSecretsKey({ secretsKey: value, dataDir: dir.path }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('SECRETS_KEY');
    if (value) expect((err as Error).message).not.toContain(value);
  });

  it('generates the key file with mode 0600 at first start, then reads it back', async () => {
    const first = await loadSecretsKey({ dataDir: join(dir.path, 'data') });
    expect(first.source).toBe('generated');
    expect(first.key).toHaveLength(32);
    const file = join(dir.path, 'data', 'secrets.key');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8').trim()).toBe(first.key.toString('base64'));
    expect(readdirSync(join(dir.path, 'data'))).toEqual(['secrets.key']);
    const again = await loadSecretsKey({ dataDir: join(dir.path, 'data') });
    expect(again).toEqual({ key: first.key, source: 'file' });
  });

  it('refuses a damaged key file without printing its content', async () => {
    writeFileSync(dir.file('secrets.key'), 'c2hvcnQ=\n');
    await expect(loadSecretsKey({ dataDir: dir.path })).rejects.toThrow(/secrets\.key.*SECRETS_KEY/);
    await expect(loadSecretsKey({ dataDir: dir.path })).rejects.not.toThrow(/c2hvcnQ/);
  });

  it('gives concurrent callers in one process the same key', async () => {
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadSecretsKey({ dataDir: dir.path })));
    expect(new Set(keys.map((k) => k.key.toString('hex'))).size).toBe(1);
    expect(keys.filter((k) => k.source === 'generated')).toHaveLength(1);
    expect(readdirSync(dir.path)).toEqual(['secrets.key']);
  });

  it('gives two processes starting at once the same key', async () => {
    const run = promisify(execFile);
    const script =
      "const { loadSecretsKey } = require('./src/participants/secrets.ts');" +
      'loadSecretsKey({ dataDir: process.env.KEY_DIR }).then((k) => process.stdout.write(k.key.toString("hex")));';
    const env = { ...process.env, KEY_DIR: dir.path };
    const outputs = await Promise.all(
      [1, 2, 3].map(() => run(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, env })),
    );
    const keys = outputs.map((o) => o.stdout.trim());
    expect(keys[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(new Set(keys).size).toBe(1);
    expect(readFileSync(dir.file('secrets.key'), 'utf8').trim()).toBe(Buffer.from(keys[0]!, 'hex').toString('base64'));
    expect(readdirSync(dir.path)).toEqual(['secrets.key']);
  }, 30_000);
});
