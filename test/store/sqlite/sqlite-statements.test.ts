import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { migrateSqlite } from '../../../src/store/sqlite/migrate.js';

const queriesDir = fileURLToPath(new URL('../../../src/store/sqlite/queries/', import.meta.url));

/** Every statement the embedded store runs: the strings its query modules export, and those of the objects they export. */
async function storeStatements(): Promise<{ name: string; sql: string }[]> {
  const statements: { name: string; sql: string }[] = [];
  for (const file of readdirSync(queriesDir).filter((f) => f.endsWith('.ts'))) {
    const module = (await import(`${queriesDir}${file}`)) as Record<string, unknown>;
    for (const [name, value] of Object.entries(module)) {
      if (typeof value === 'string') statements.push({ name: `${file} ${name}`, sql: value });
      else if (value && typeof value === 'object') {
        for (const [key, inner] of Object.entries(value)) if (typeof inner === 'string') statements.push({ name: `${file} ${name}.${key}`, sql: inner });
      }
    }
  }
  return statements;
}

/** Columns that some partial index's WHERE compares with a literal (`status = 'QUEUED'`, `on_hold = 0`). */
function columnsOfPartialIndexes(): Set<string> {
  const db = new Database(':memory:');
  try {
    migrateSqlite(db);
    const wheres = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql LIKE '% WHERE %'").all() as { sql: string }[]).map(
      ({ sql }) => sql.slice(sql.search(/\sWHERE\s/i)),
    );
    const columns = new Set<string>();
    for (const where of wheres) for (const match of where.matchAll(/(\w+)\s*(?:=|<>|!=|<=|>=|<|>|\bIN\b)\s*\(?\s*('|-?\d)/gi)) columns.add(match[1]!.toLowerCase());
    return columns;
  } finally {
    db.close();
  }
}

/** Whether the text at `at` sits in a parenthesised group that opens with a parameter: `(@status IS NULL OR j.status = @status)`. */
function inOptionalFilter(sql: string, at: number): boolean {
  let depth = 0;
  for (let i = at - 1; i >= 0; i--) {
    if (sql[i] === ')') depth += 1;
    else if (sql[i] === '(') {
      if (depth === 0) return /^\(\s*[@:$]/.test(sql.slice(i));
      depth -= 1;
    }
  }
  return false;
}

/**
 * SQLite prepares a statement again at every run that binds a parameter its planner looked at
 * (store/sqlite/queries/bound-parameters.ts): with better-sqlite3, which binds every parameter at
 * every run, every run. Nothing but the time shows it, so the two places where the planner looks
 * are checked on the text of every statement of the store.
 */
describe("the embedded store's statements", () => {
  it('take a LIMIT from a literal or from limitBy, never from a bare parameter', async () => {
    const bare = (await storeStatements()).flatMap(({ name, sql }) =>
      [...sql.matchAll(/(?<![@:$\w])LIMIT\s+/gi)].filter((m) => !/^(\d+\b|\(@\w+ \+ 0\))/.test(sql.slice(m.index! + m[0].length))).map(() => name),
    );
    expect(bare).toEqual([]);
  });

  it('compare no column of a partial index with a bare parameter, but behind an INDEXED BY', async () => {
    const columns = columnsOfPartialIndexes();
    expect(columns).toContain('status');
    const compared = new RegExp(`\\b(?:\\w+\\.)?(${[...columns].join('|')})\\s*(?:=|<>|!=|<=|>=|<|>|\\bIN\\b)\\s*\\(?\\s*[@:$]\\w+`, 'gi');
    const found = (await storeStatements())
      .filter(({ sql }) => !/\bINDEXED BY\b/i.test(sql))
      .flatMap(({ name, sql }) => {
        // Comparisons are in WHERE clauses (an UPDATE's SET before its WHERE assigns instead).
        const where = sql.search(/\bWHERE\b/i);
        return [...sql.matchAll(compared)].filter((m) => where >= 0 && m.index! > where && !inOptionalFilter(sql, m.index!)).map((m) => `${name}: ${m[0]}`);
      });
    expect(found).toEqual([]);
  });
});
