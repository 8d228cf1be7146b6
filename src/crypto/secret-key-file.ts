import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * With the embedded store and no PUNCTUAL_SECRET_KEY, the key that encrypts webhook secrets is
 * generated once and kept beside the database (mode 0600). Losing it makes the stored webhook
 * secrets unreadable, so it belongs in the same backup as the database.
 */
export function loadOrCreateSecretKey(databasePath: string): string {
  const path = join(dirname(databasePath), 'punctual.secret-key');
  mkdirSync(dirname(path), { recursive: true });
  try {
    writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readFileSync(path, 'utf8').trim();
}
