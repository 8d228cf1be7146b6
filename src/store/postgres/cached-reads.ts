/**
 * Keys, projects and secrets are cached per instance (ReadCache) while the instance listens:
 * every change to them sends a NOTIFY in its own transaction, and every instance drops its cache
 * when it arrives (within about a millisecond here). While the LISTEN connection is down, nothing
 * is cached. A LISTEN connection that goes silent without an error is found out by its heartbeat
 * (see PostgresListener), so a missed notification leaves a revoked key working on this instance
 * for at most the heartbeat's interval plus its timeout.
 */
import type pg from 'pg';
import { principalFromRow } from '../principal-row.js';
import { ReadCache } from '../read-cache.js';
import type { ApiKeyPrincipal, ProjectRow, WebhookSecretRow } from '../store.js';
import type { ConnectionPool } from './connection-pool.js';
import { ApiKeyFindByHash } from './queries/auth.js';
import { NotifyConfigChanged } from './queries/database.js';
import { ProjectGetMany, WebhookSecretListActive } from './queries/tenancy.js';

/** What every API request (its key) and every delivery (its project and secrets) reads, through the cache. */
export class CachedReads {
  /** Off until the LISTEN connection hears the config channel, and again whenever it is lost. */
  private readonly cache = new ReadCache(false);

  constructor(private readonly db: ConnectionPool) {}

  /** The LISTEN connection is up (changes arrive as notifications from here on) or lost. */
  setListening(listening: boolean): void {
    this.cache.setEnabled(listening);
  }

  /** Another instance committed a change to keys, projects, teams or secrets. */
  drop(): void {
    this.cache.drop();
  }

  /** A change to keys, projects, teams or secrets: every instance drops its read cache when it commits. */
  async change<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    try {
      return await this.db.transaction(async (client) => {
        const result = await fn(client);
        await this.db.query(NotifyConfigChanged, [], client);
        return result;
      });
    } finally {
      // Committed or not (a lost COMMIT answer may hide a commit): read again from here on.
      this.cache.drop();
    }
  }

  async principal(hash: Buffer): Promise<ApiKeyPrincipal | null> {
    const cached = this.cache.principal(hash);
    if (cached) return cached;
    const mark = this.cache.mark();
    const row = (await this.db.rows<Record<string, unknown>>(ApiKeyFindByHash, [hash]))[0];
    if (!row) return null;
    const principal = principalFromRow(row);
    this.cache.storePrincipal(mark, hash, principal);
    return principal;
  }

  /** lastUsedAt, kept in step in the cache without a drop. */
  touchKey(keyId: string, now: number): void {
    this.cache.touchKey(keyId, now);
  }

  async projects(projectIds: string[]): Promise<ProjectRow[]> {
    const cached = projectIds.map((id) => this.cache.project(id));
    const missing = projectIds.filter((_, i) => !cached[i]);
    if (missing.length === 0) return cached as ProjectRow[];
    const mark = this.cache.mark();
    const read = await this.db.rows<ProjectRow>(ProjectGetMany, [missing]);
    for (const project of read) this.cache.storeProject(mark, project);
    const byId = new Map(read.map((p) => [p.id, p]));
    return projectIds.flatMap((id, i) => cached[i] ?? byId.get(id) ?? []);
  }

  async activeSecrets(params: { projectId: string; now: number }): Promise<WebhookSecretRow[]> {
    const cached = this.cache.activeSecrets(params.projectId, params.now);
    if (cached) return cached;
    const mark = this.cache.mark();
    const rows = await this.db.rows<WebhookSecretRow>(WebhookSecretListActive, [params.projectId, params.now]);
    this.cache.storeActiveSecrets(mark, params.projectId, params.now, rows);
    return rows;
  }
}
