/**
 * The first admin (API.md, Identity and access, Bootstrap). With
 * ADMIN_API_KEY set, that token is an admin key and nothing is written.
 * Without it, when no usable admin key exists, one is minted and its token
 * written to DATA_DIR/admin.key (mode 0600; `admin-N.key` when that file
 * already exists, which is never overwritten); the log names the file, never
 * the token. The token reaches the file before the key is stored, so a key
 * nobody can read never exists; the decision "none exists" is one across
 * replicas (KeyStore.insertFirstAdmin).
 */
import { link, mkdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BUILT_IN_ADMIN_SUBJECT, hashToken, newKeyId, newToken } from '../core/keys';
import type { KeyStore } from '../core/ports';
import type { Logger } from '../logger';

export const ADMIN_KEY_FILE = 'admin.key';

export async function bootstrapAdminKey(
  keys: KeyStore,
  opts: { adminApiKey: string | undefined; dataDir: string },
  logger: Logger,
): Promise<string | undefined> {
  if (opts.adminApiKey !== undefined) {
    logger.info('ADMIN_API_KEY is set: it is an admin key');
    return undefined;
  }
  const file = join(opts.dataDir, ADMIN_KEY_FILE);
  const temp = `${file}.${process.pid}.tmp`;
  const token = newToken();
  await mkdir(opts.dataDir, { recursive: true });
  await writeFile(temp, `${token}\n`, { mode: 0o600, flag: 'wx' });
  let created: boolean;
  try {
    created = await keys.insertFirstAdmin({
      id: newKeyId(),
      tokenHash: hashToken(token),
      role: 'admin',
      subject: BUILT_IN_ADMIN_SUBJECT,
      conversationId: null,
      maxLevel: null,
      label: 'bootstrap',
      expiresAt: null,
      createdBy: 'bootstrap',
    });
  } catch (err) {
    await unlink(temp).catch(() => undefined);
    throw err;
  }
  if (!created) {
    await unlink(temp).catch(() => undefined);
    return undefined;
  }
  // Never over another admin.key: it may be the only copy of another database's admin token
  // (a second instance with DATABASE_URL started in the same directory, say).
  const target = await placeExclusively(temp, file);
  logger.info({ file: target }, 'No admin key existed: created one; its token is in this file (mode 0600)');
  return target;
}

/** Links `temp` to `file`, or to `admin-N.key` beside it when `file` exists; removes `temp`. */
async function placeExclusively(temp: string, file: string): Promise<string> {
  try {
    for (let n = 1; ; n++) {
      const target = n === 1 ? file : file.replace(/admin\.key$/, `admin-${n}.key`);
      try {
        await link(temp, target);
        return target;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || n >= 100) throw err;
      }
    }
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}
