import Database from 'better-sqlite3';
import pg from 'pg';

/**
 * Every row of every table of an app's database, through a connection of its own, so a test can
 * show that a request changed nothing. `api_keys.last_used_at` is left out: a request that passed
 * authentication may touch it, and that says nothing about the request's own effects.
 */
export interface DatabaseSnapshotter {
  snapshot(): Promise<Record<string, string[]>>;
  close(): Promise<void>;
}

const VOLATILE_COLUMNS = new Set(['last_used_at']);

function serialize(rows: Record<string, unknown>[]): string[] {
  return rows
    .map((row) =>
      JSON.stringify(
        Object.entries(row).filter(([column]) => !VOLATILE_COLUMNS.has(column)),
        (_key, value: unknown) => (Buffer.isBuffer(value) ? value.toString('hex') : typeof value === 'bigint' ? String(value) : value),
      ),
    )
    .sort();
}

export async function openSnapshotter(databaseUrl: string): Promise<DatabaseSnapshotter> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true });
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").all() as { name: string }[]).map(
      (t) => t.name,
    );
    const reads = tables.map((table) => [table, db.prepare(`SELECT * FROM "${table}"`)] as const);
    return {
      async snapshot() {
        return Object.fromEntries(reads.map(([table, read]) => [table, serialize(read.all() as Record<string, unknown>[])]));
      },
      async close() {
        db.close();
      },
    };
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const tables = (
    await client.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'")
  ).rows.map((t) => t.table_name);
  // One round trip for the whole database: each table as a JSON array of its rows.
  const sql = `SELECT ${tables.map((t) => `(SELECT coalesce(json_agg(t), '[]') FROM "${t}" t) AS "${t}"`).join(', ')}`;
  return {
    async snapshot() {
      const [row] = (await client.query<Record<string, Record<string, unknown>[]>>(sql)).rows;
      return Object.fromEntries(tables.map((t) => [t, serialize(row![t]!)]));
    },
    async close() {
      await client.end();
    },
  };
}
