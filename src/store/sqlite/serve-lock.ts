import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError } from '../../config.js';

/**
 * One `punctual serve` per SQLite file: a second one would take over the first one's leases at
 * start and deliver its in-flight jobs again. The lock file holds the serving process's pid; a
 * lock left by a process that no longer exists (kill -9) is taken over.
 */
export function acquireServeLock(databasePath: string): () => void {
  const path = `${databasePath}.serve-lock`;
  mkdirSync(dirname(path), { recursive: true });
  try {
    writeFileSync(path, String(process.pid), { flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const holder = Number(readFileSync(path, 'utf8'));
    if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder)) {
      throw new ConfigError(`Another punctual serve (pid ${holder}) is serving ${databasePath}; one process per SQLite file (use PostgreSQL for several)`);
    }
    writeFileSync(path, String(process.pid));
  }
  return () => rmSync(path, { force: true });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
