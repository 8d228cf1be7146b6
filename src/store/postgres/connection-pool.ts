import pg from 'pg';
import { UnavailableError } from '../../errors.js';
import { isPostgresUnavailable, isStalePreparedStatement, isWriteConflict, runsAgainOnce, translatePostgresError } from './postgres-errors.js';
import { NotifyDue } from './queries/database.js';
import { PREPARED_STATEMENTS } from './queries/prepared-statements.js';

export interface ConnectionOptions {
  url: string;
  /** Connections per instance. */
  poolSize?: number;
  connectTimeoutMs?: number;
  statementTimeoutMs?: number;
  /** Tests run each file in a schema of its own. */
  schema?: string;
}

/** Jobs due further ahead than this are left to other instances' next-due timers (they look at least every 30 s). */
export const NOTIFY_HORIZON_MS = 30_000;
const POOL_SIZE_DEFAULT = 10;
const CONNECT_TIMEOUT_MS_DEFAULT = 5_000;
const STATEMENT_TIMEOUT_MS_DEFAULT = 10_000;
/**
 * TCP keepalive on every connection, probing after this much silence (then, with Node's libuv,
 * ten probes a second apart): an idle connection whose server vanished without a word (a dead
 * host, a dropped route) fails within about 20 s instead of the operating system's two hours,
 * so the pool does not hand it out and a migration does not wait on it for ever.
 */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

/** bigint columns hold epoch milliseconds, well inside Number's exact range: read them as numbers. */
const types = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as typeof pg.types.getTypeParser,
};

/** The pool, or one connection inside a transaction. */
export type Queryable = Pick<pg.PoolClient, 'query'>;

/**
 * Names of the statements prepared once per connection (PREPARED_STATEMENTS). A name is never
 * given to another text, as pg requires; once a name is found stale (isStalePreparedStatement)
 * every text gets a new name, so that each connection prepares it afresh on its next run. Runs
 * already under way with the old names, failing in turn, rename nothing more.
 */
class StatementNames {
  private readonly names = new Map<string, string>();
  private issued = 0;

  config(text: string, values: unknown[]): pg.QueryConfig {
    if (!PREPARED_STATEMENTS.has(text)) return { text, values };
    let name = this.names.get(text);
    if (name === undefined) {
      name = `punctual_${++this.issued}`;
      this.names.set(text, name);
    }
    return { name, text, values };
  }

  /** After `config`'s statement was found stale: new names for all, unless they were given since. */
  stale(config: pg.QueryConfig): void {
    if (config.name !== undefined && this.names.get(config.text) === config.name) this.names.clear();
  }
}

/**
 * The PostgreSQL store's connections: a pool for statements and short transactions, with errors
 * turned into Punctual's (a database that cannot be reached answers 503 within the connect or
 * statement timeout, never a hang or a 500), a write conflict retried once, and the statements every
 * job runs prepared once per connection.
 */
export class ConnectionPool {
  private readonly pool: pg.Pool;
  private readonly statements = new StatementNames();

  constructor(private readonly options: ConnectionOptions) {
    const statementTimeout = options.statementTimeoutMs ?? STATEMENT_TIMEOUT_MS_DEFAULT;
    this.pool = new pg.Pool({
      ...this.config('punctual'),
      max: options.poolSize ?? POOL_SIZE_DEFAULT,
      idleTimeoutMillis: 30_000,
      // The server cancels a statement past this; the client gives up a little later if the server is gone.
      statement_timeout: statementTimeout,
      query_timeout: statementTimeout + 1_000,
    });
    // An idle client losing its connection must not crash the process; the next query reconnects.
    this.pool.on('error', () => {});
  }

  /** What every connection of this store shares: the pool's, the LISTEN connection and the migration's. */
  config(applicationName: string): pg.ClientConfig {
    return {
      connectionString: this.options.url,
      connectionTimeoutMillis: this.options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS_DEFAULT,
      application_name: applicationName,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
      types,
      ...(this.options.schema && { options: `-c search_path=${this.options.schema}` }),
    };
  }

  /**
   * One statement; those of PREPARED_STATEMENTS prepared once per connection (named statements,
   * parsed at their first run on each connection, then bound and run), the rest unnamed. On the
   * pool (its own implicit transaction), a statement that lost a deadlock or a serialization
   * conflict was rolled back whole and runs once more, and so does one whose prepared form went
   * stale (isStalePreparedStatement), under a new name; inside a transaction (`client` given) the
   * whole transaction is retried instead, by transaction().
   */
  async query<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], client: Queryable = this.pool): Promise<pg.QueryResult<R>> {
    const first = this.statements.config(text, values);
    try {
      return await client.query<R>(first);
    } catch (error) {
      if (isStalePreparedStatement(error)) this.statements.stale(first);
      if (client !== this.pool || !runsAgainOnce(error)) throw translatePostgresError(error);
    }
    const again = this.statements.config(text, values);
    try {
      return await client.query<R>(again);
    } catch (error) {
      if (isStalePreparedStatement(error)) this.statements.stale(again);
      throw translatePostgresError(error);
    }
  }

  async rows<R extends pg.QueryResultRow>(text: string, values: unknown[] = [], client?: Queryable): Promise<R[]> {
    return (await this.query<R>(text, values, client)).rows;
  }

  /**
   * A short transaction on one connection; never held across anything but its own statements. One
   * that lost a deadlock or a serialization conflict was rolled back whole by PostgreSQL and runs
   * once more; a second loss answers 503, for the client to retry. One that met a stale prepared
   * statement (a migration changed what it returns) runs once more too, on another connection, its
   * statements prepared anew: the one it met them on is closed, so the old ones go with it.
   */
  async transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      return await this.transactionOnce(fn);
    } catch (error) {
      if (!(error instanceof UnavailableError && runsAgainOnce(error.cause))) throw error;
    }
    return this.transactionOnce(fn);
  }

  private async transactionOnce<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw translatePostgresError(error);
    }
    let broken = false;
    // A connection lost while the transaction holds it (a restart, pg_terminate_backend) is told by
    // an 'error' event, which the pool listens for only while a client is idle: unheard, it would
    // crash the process. The transaction's statements fail instead, and the client is let go.
    const lost = () => (broken = true);
    client.on('error', lost);
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // fn's statements throw translated errors: look at what PostgreSQL said.
      const cause = error instanceof UnavailableError ? error.cause : error;
      broken ||= isPostgresUnavailable(cause) && !isWriteConflict(cause);
      if (!broken) await client.query('ROLLBACK').catch(() => (broken = true));
      throw translatePostgresError(error);
    } finally {
      client.removeListener('error', lost);
      client.release(broken);
    }
  }

  /**
   * A hint to the other instances, sent after the change it is about was committed: if it cannot
   * be sent, the change stands (so the caller must not answer an error for it) and the others find
   * the job with their next-due timers. Inside a transaction it fails with it.
   */
  async notifyDue(runAt: number, now: number, client?: Queryable): Promise<void> {
    if (runAt - now > NOTIFY_HORIZON_MS) return;
    if (client) {
      await this.query(NotifyDue, [String(runAt)], client);
      return;
    }
    await this.query(NotifyDue, [String(runAt)]).catch(() => {});
  }

  end(): Promise<void> {
    return this.pool.end();
  }
}
