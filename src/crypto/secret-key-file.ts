import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The key that encrypts webhook secrets when PUNCTUAL_SECRET_KEY is not set: generated once into
 * `path` (mode 0600; the store says where, Store.secretKeyFile) and read from there at every start.
 */
export function loadOrCreateSecretKey(path: string): string {
  mkdirSync(dirname(path), { recursive: true });
  try {
    writeFileSync(path, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return readFileSync(path, 'utf8').trim();
}
