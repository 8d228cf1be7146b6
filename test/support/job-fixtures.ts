import Database from 'better-sqlite3';
import pg from 'pg';

/** PostgreSQL's $1, $2 … as better-sqlite3 named parameters @p1, @p2 … */
const named = (values: unknown[]) => Object.fromEntries(values.map((v, i) => [`p${i + 1}`, v]));

/**
 * Puts a job in a state the API cannot reach by itself (FAILED without deliveries, STARTED without
 * a worker), through a second connection to the same database: a fixture, not a replacement for
 * the store.
 */
export async function setJobState(
  databaseUrl: string,
  jobId: string,
  fields: { status: string; attemptCount?: number; lastError?: string; failedAt?: number },
): Promise<void> {
  const values = [jobId, fields.status, fields.attemptCount ?? null, fields.lastError ?? null, fields.failedAt ?? null];
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length));
    try {
      db.prepare(
        `UPDATE jobs SET status = @p2, attempt_count = COALESCE(@p3, attempt_count), last_error = COALESCE(@p4, last_error),
         failed_at = @p5 WHERE id = @p1`,
      ).run(named(values));
    } finally {
      db.close();
    }
    return;
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(
      `UPDATE jobs SET status = $2, attempt_count = COALESCE($3, attempt_count), last_error = COALESCE($4, last_error),
       failed_at = $5 WHERE id = $1`,
      values,
    );
  } finally {
    await client.end();
  }
}

/** Rows of a query on the app's database, whichever store it is (SQL written to run on both). */
export async function queryRows<R>(databaseUrl: string, sql: string, params: unknown[] = []): Promise<R[]> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length), { readonly: true });
    try {
      return db.prepare(sql.replace(/\$(\d+)/g, '@p$1')).all(named(params)) as R[];
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as R[];
  } finally {
    await client.end();
  }
}

/** Runs one write on the app's database through a second connection (SQL written to run on both): a fixture for states at scale. */
export async function execSql(databaseUrl: string, sql: string, params: unknown[] = []): Promise<number> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new Database(databaseUrl.slice('sqlite:'.length));
    try {
      db.pragma('busy_timeout = 5000');
      return db.prepare(sql.replace(/\$(\d+)/g, '@p$1')).run(named(params)).changes;
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rowCount ?? 0;
  } finally {
    await client.end();
  }
}
