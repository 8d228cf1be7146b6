import type Database from 'better-sqlite3';
import { principalFromRow } from '../principal-row.js';
import { ReadCache } from '../read-cache.js';
import type { ApiKeyPrincipal, ProjectRow, WebhookSecretRow } from '../store.js';
import { toProject } from './sqlite-rows.js';
import { ApiKeyFindByHash } from './queries/auth.js';
import { CacheEpochGet, ProjectGet, WebhookSecretListActive } from './queries/tenancy.js';

/**
 * What every API request (its key) and every delivery (its project and secrets) reads, through the
 * cache. Dropped when this store's writer commits a change to keys, projects, teams or secrets
 * (afterCommit), and when the cache epoch (cache-epoch.ts) shows that another process (the CLI)
 * committed one. The epoch is read at most once per event-loop turn: requests parsed in one turn
 * are concurrent anyway.
 */
export class CachedReads {
  private readonly cache = new ReadCache();
  private cacheEpoch: string | null | undefined = undefined;
  private checkedThisTurn = false;

  constructor(private readonly sql: (text: string) => Database.Statement<unknown[], unknown>) {}

  /** Drops the cache once a write that can change what it holds has committed. */
  afterCommit<T>(write: Promise<T>): Promise<T> {
    return write.then((result) => {
      this.cache.drop();
      return result;
    });
  }

  private checkEpoch(): void {
    if (this.checkedThisTurn) return;
    this.checkedThisTurn = true;
    setImmediate(() => {
      this.checkedThisTurn = false;
    });
    const epoch = (this.sql(CacheEpochGet).get() as { value: string } | undefined)?.value ?? null;
    if (epoch !== this.cacheEpoch) {
      this.cache.drop();
      this.cacheEpoch = epoch;
    }
  }

  project(projectId: string): ProjectRow | null {
    this.checkEpoch();
    const cached = this.cache.project(projectId);
    if (cached) return cached;
    const row = this.sql(ProjectGet).get(projectId);
    if (!row) return null;
    const project = toProject(row);
    this.cache.storeProject(this.cache.mark(), project);
    return project;
  }

  principal(hash: Buffer): ApiKeyPrincipal | null {
    this.checkEpoch();
    const cached = this.cache.principal(hash);
    if (cached) return cached;
    const row = this.sql(ApiKeyFindByHash).get(hash) as Record<string, unknown> | undefined;
    if (!row) return null;
    const principal = principalFromRow(row);
    this.cache.storePrincipal(this.cache.mark(), hash, principal);
    return principal;
  }

  /** lastUsedAt, kept in step in the cache without a drop. */
  touchKey(keyId: string, now: number): void {
    this.cache.touchKey(keyId, now);
  }

  activeSecrets(params: { projectId: string; now: number }): WebhookSecretRow[] {
    this.checkEpoch();
    const cached = this.cache.activeSecrets(params.projectId, params.now);
    if (cached) return cached;
    const rows = this.sql(WebhookSecretListActive).all(params) as WebhookSecretRow[];
    this.cache.storeActiveSecrets(this.cache.mark(), params.projectId, params.now, rows);
    return rows;
  }
}
