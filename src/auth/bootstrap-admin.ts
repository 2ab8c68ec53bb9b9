/**
 * The first admin (API.md, Identity and access, Bootstrap). With
 * ADMIN_API_KEY set, that token is an admin key and nothing is written.
 * Without it, when no usable admin key exists, one is minted and its token
 * written to DATA_DIR/admin.key (mode 0600); the log names the file, never
 * the token. The token reaches the file before the key is stored, so a key
 * nobody can read never exists; the decision "none exists" is one across
 * replicas (KeyStore.insertFirstAdmin).
 */
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { hashToken, newKeyId, newToken } from '../core/keys';
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
  let created = false;
  try {
    created = await keys.insertFirstAdmin({
      id: newKeyId(),
      tokenHash: hashToken(token),
      role: 'admin',
      subject: 'admin',
      conversationId: null,
      maxLevel: null,
      label: 'bootstrap',
      expiresAt: null,
      createdBy: 'bootstrap',
    });
  } finally {
    if (created) await rename(temp, file);
    else await unlink(temp).catch(() => undefined);
  }
  if (created) logger.info({ file }, 'No admin key existed: created one; its token is in this file (mode 0600)');
  return created ? file : undefined;
}
