import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { limitBy } from '../../../src/store/sqlite/queries/bound-limit.js';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const sqliteSources = join(root, 'src/store/sqlite');

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(path);
    return /\.(ts|sql)$/.test(entry.name) ? [path] : [];
  });
}

/**
 * SQLite prepares a statement again at every run that binds a new value to a parameter it read
 * while preparing it, as it reads a bare parameter in LIMIT or OFFSET (bound-limit.ts): with
 * better-sqlite3, which binds every parameter at every run, that is every run. Nothing but the time
 * shows it, so the rule is checked on the text of the store's statements.
 */
describe("the embedded store's statements", () => {
  it('never take a LIMIT or OFFSET from a bare parameter (each run would prepare the statement again)', () => {
    // SQL keywords are written in capitals here; a lower-case `limit ?` is TypeScript.
    const bare = /\b(LIMIT|OFFSET)\s+([@:$]\w+|\?)/g;
    const found = sourcesUnder(sqliteSources).flatMap((path) =>
      [...readFileSync(path, 'utf8').matchAll(bare)].map((match) => `${relative(root, path)}: ${match[0]}`),
    );
    expect(found).toEqual([]);
  });

  it('write a bound LIMIT as an expression', () => {
    expect(limitBy('@limit')).toBe('LIMIT (@limit + 0)');
  });
});
