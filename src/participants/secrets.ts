/**
 * Participants' secrets at rest (API.md "Participants": headers and env are
 * stored encrypted, AES-256-GCM, with the key from SECRETS_KEY or, unset,
 * DATA_DIR/secrets.key generated at first start with mode 0600).
 *
 * A sealed value is text: `v1:` then base64 of IV (12 random bytes) | tag
 * (16 bytes) | ciphertext of the value's JSON. The version prefix lets a
 * later format sit beside this one. The key's fingerprint (a keyed digest
 * of a fixed label, never the key) is what the database keeps to notice a
 * replica started with another key. No error here carries a secret or the key.
 */
import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';

const VERSION = 'v1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Bound into every ciphertext (GCM additional data): a value sealed for another purpose does not open here. */
const AAD = Buffer.from('tool-orchestrator participant secret v1');
const FINGERPRINT_LABEL = 'tool-orchestrator secrets key fingerprint v1';
export const SECRETS_KEY_FILE = 'secrets.key';

/** A sealed value that does not open: tampered, truncated, of an unknown format, or sealed with another key. */
export class SealedValueError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealedValueError';
  }
}

/** The database's secrets were sealed with another key than this process has. */
export class SecretsKeyMismatchError extends Error {
  constructor(stored: string, current: string) {
    super(
      `SECRETS_KEY does not match the key the stored participant secrets were sealed with ` +
        `(fingerprint ${stored} in the database, ${current} here): start every replica with the same ` +
        `SECRETS_KEY (or the same DATA_DIR/${SECRETS_KEY_FILE})`,
    );
    this.name = 'SecretsKeyMismatchError';
  }
}

export class SecretBox {
  /** Hex, 16 characters: an HMAC-SHA-256 of a fixed label under the key. Safe to store and print. */
  readonly fingerprint: string;

  private constructor(private readonly key: Buffer) {
    this.fingerprint = createHmac('sha256', key).update(FINGERPRINT_LABEL).digest('hex').slice(0, 16);
  }

  static fromKey(key: Buffer): SecretBox {
    if (!Buffer.isBuffer(key) || key.length !== KEY_BYTES) {
      throw new TypeError(`A secrets key is ${KEY_BYTES} bytes`);
    }
    return new SecretBox(Buffer.from(key));
  }

  /** Any JSON-serialisable value → `v1:<base64>`; a fresh random IV each time. */
  seal(value: unknown): string {
    const json = JSON.stringify(value) as string | undefined;
    if (json === undefined) throw new TypeError('Only a JSON-serialisable value can be sealed');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(AAD);
    const body = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64')}`;
  }

  /** The value sealed; throws SealedValueError (naming no secret) when it does not open. */
  open<T = unknown>(sealed: string): T {
    const raw = typeof sealed === 'string' && sealed.startsWith(`${VERSION}:`) ? sealed.slice(VERSION.length + 1) : '';
    const bytes = isBase64(raw) ? Buffer.from(raw, 'base64') : Buffer.alloc(0);
    if (bytes.length < IV_BYTES + TAG_BYTES) {
      throw new SealedValueError('A stored secret is not in a known sealed format');
    }
    const decipher = createDecipheriv('aes-256-gcm', this.key, bytes.subarray(0, IV_BYTES), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(AAD);
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    let json: string;
    try {
      json = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new SealedValueError('A stored secret does not open: it was altered, or sealed with another SECRETS_KEY');
    }
    return JSON.parse(json) as T;
  }
}

/**
 * Throws SecretsKeyMismatchError when the database holds a fingerprint and it
 * is not this box's. `stored` undefined: nothing sealed yet (the caller stores
 * `box.fingerprint`).
 */
export function checkFingerprint(stored: string | undefined, box: SecretBox): void {
  if (stored !== undefined && stored !== box.fingerprint) throw new SecretsKeyMismatchError(stored, box.fingerprint);
}

export interface LoadSecretsKeyOptions {
  /** SECRETS_KEY: 32 bytes in base64. Undefined: the key file in dataDir. */
  secretsKey?: string;
  dataDir: string;
}

export type SecretsKeySource = 'env' | 'file' | 'generated';

/**
 * The secrets key: SECRETS_KEY when set (exactly 32 bytes in base64, else an
 * error naming the variable and not its value), else DATA_DIR/secrets.key,
 * generated (32 random bytes, base64, mode 0600) when absent. Two processes
 * starting at once end with one key: each writes a temporary file and links
 * it into place, and the one that finds the name taken reads the winner's.
 */
export async function loadSecretsKey(
  options: LoadSecretsKeyOptions,
): Promise<{ key: Buffer; source: SecretsKeySource }> {
  if (options.secretsKey !== undefined) {
    return { key: decodeKey(options.secretsKey, 'SECRETS_KEY'), source: 'env' };
  }
  const file = path.join(options.dataDir, SECRETS_KEY_FILE);
  const existing = await readKeyFile(file);
  if (existing) return { key: existing, source: 'file' };
  await fs.mkdir(options.dataDir, { recursive: true });
  const key = randomBytes(KEY_BYTES);
  if (await publishKeyFile(file, key)) return { key, source: 'generated' };
  const winner = await readKeyFile(file);
  if (!winner) throw new Error(`${file} vanished while the secrets key was being created`);
  return { key: winner, source: 'file' };
}

function decodeKey(text: string, name: string): Buffer {
  const trimmed = text.trim();
  const key = isBase64(trimmed) ? Buffer.from(trimmed, 'base64') : undefined;
  if (key?.length !== KEY_BYTES) {
    throw new Error(
      `${name} must be ${KEY_BYTES} random bytes in base64 (for example the output of \`openssl rand -base64 32\`)`,
    );
  }
  return key;
}

async function readKeyFile(file: string): Promise<Buffer | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return decodeKey(text, `The secrets key file ${file} (used when SECRETS_KEY is unset)`);
}

/** Writes the key to a private temporary file, then links it to `file`: false when `file` already exists. */
async function publishKeyFile(file: string, key: Buffer): Promise<boolean> {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await fs.open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(`${key.toString('base64')}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    // link(2) fails with EEXIST instead of replacing: the first process to link wins.
    await fs.link(tmp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await fs.rm(tmp, { force: true });
  }
}

function isBase64(text: string): boolean {
  return text.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(text);
}
