import type { ApiKeyPrincipal } from './auth-store.js';
import type { ProjectRow, WebhookSecretRow } from './tenancy-store.js';

interface CachedSecrets {
  rows: WebhookSecretRow[];
  /** The first expiry among them: read again from then on. */
  validUntil: number;
  /** The `now` of the read: an earlier `now` (an injected clock) reads again. */
  readAt: number;
}

/**
 * What every API request (its key) and every delivery (its project and secrets) reads, and almost
 * nothing writes. Each store decides when the cache is dropped: on its own committed writes to
 * keys, projects, teams or secrets, and when another connection or instance may have written
 * (SQLite: PRAGMA data_version; PostgreSQL: a NOTIFY). A read that began before a drop is not
 * stored, so a drop that lands while a read is under way cannot be undone by it.
 */
export class ReadCache {
  private readonly principals = new Map<string, ApiKeyPrincipal>();
  private readonly projects = new Map<string, ProjectRow>();
  private readonly secrets = new Map<string, CachedSecrets>();
  private generation = 0;
  /** Off, the cache stores nothing (PostgreSQL while it cannot hear other instances' changes). */
  private enabled: boolean;

  constructor(enabled = true) {
    this.enabled = enabled;
  }

  drop(): void {
    this.generation += 1;
    this.principals.clear();
    this.projects.clear();
    this.secrets.clear();
  }

  setEnabled(enabled: boolean): void {
    this.enabled = enabled;
    this.drop();
  }

  /** Call before the read; pass the result to the matching store method. */
  mark(): number {
    return this.generation;
  }

  private keeps(mark: number): boolean {
    return this.enabled && mark === this.generation;
  }

  principal(hash: Buffer): ApiKeyPrincipal | undefined {
    return this.principals.get(hash.toString('latin1'));
  }

  storePrincipal(mark: number, hash: Buffer, principal: ApiKeyPrincipal): void {
    if (this.keeps(mark)) this.principals.set(hash.toString('latin1'), principal);
  }

  /** lastUsedAt is written at most once a minute: keep cached principals in step without a drop. */
  touchKey(keyId: string, now: number): void {
    for (const principal of this.principals.values()) {
      if (principal.key.id === keyId) principal.key.lastUsedAt = Math.max(principal.key.lastUsedAt ?? 0, now);
    }
  }

  project(projectId: string): ProjectRow | undefined {
    return this.projects.get(projectId);
  }

  storeProject(mark: number, project: ProjectRow): void {
    if (this.keeps(mark)) this.projects.set(project.id, project);
  }

  activeSecrets(projectId: string, now: number): WebhookSecretRow[] | undefined {
    const cached = this.secrets.get(projectId);
    return cached && now < cached.validUntil && now >= cached.readAt ? cached.rows : undefined;
  }

  storeActiveSecrets(mark: number, projectId: string, now: number, rows: WebhookSecretRow[]): void {
    if (!this.keeps(mark)) return;
    const validUntil = Math.min(Number.MAX_SAFE_INTEGER, ...rows.map((row) => row.expiresAt ?? Number.MAX_SAFE_INTEGER));
    this.secrets.set(projectId, { rows, validUntil, readAt: now });
  }
}
