/**
 * Users, sessions and API keys in PostgreSQL (../auth-store.ts); a key's principal is read through
 * the read cache, and a revocation drops every instance's.
 */
import type { ApiKeyPrincipal, ApiKeyRow, AuthStore, SessionRow, UserRow, UserWithPassword } from '../auth-store.js';
import { sessionFromRow } from '../session-row.js';
import type { CachedReads } from './cached-reads.js';
import type { ConnectionPool } from './connection-pool.js';
import { ApiKeyGet, ApiKeyInsert, ApiKeyListByProject, ApiKeyRevoke, ApiKeyTouch, SessionDelete, SessionDeleteByUser, SessionDeleteExpired, SessionGet, SessionInsert, UserCount, UserGet, UserGetByEmail, UserGetPasswordHash, UserInsert, UserList, UserUpdatePassword } from './queries/auth.js';

export class PostgresAuth implements AuthStore {
  constructor(
    private readonly db: ConnectionPool,
    private readonly cached: CachedReads,
  ) {}

  async userInsert(user: UserWithPassword): Promise<boolean> {
    const result = await this.db.query(UserInsert, [user.id, user.email, user.passwordHash, user.isOperator, user.createdAt, user.updatedAt]);
    return result.rowCount === 1;
  }

  async userGet(userId: string): Promise<UserRow | null> {
    return (await this.db.rows<UserRow>(UserGet, [userId]))[0] ?? null;
  }

  async userGetByEmail(email: string): Promise<UserWithPassword | null> {
    return (await this.db.rows<UserWithPassword>(UserGetByEmail, [email.toLowerCase()]))[0] ?? null;
  }

  async userGetPasswordHash(userId: string): Promise<string | null> {
    return (await this.db.rows<{ passwordHash: string }>(UserGetPasswordHash, [userId]))[0]?.passwordHash ?? null;
  }

  async userList(): Promise<UserRow[]> {
    return this.db.rows<UserRow>(UserList);
  }

  async userCount(): Promise<number> {
    return (await this.db.rows<{ n: number }>(UserCount))[0]!.n;
  }

  async userUpdatePassword(params: { userId: string; passwordHash: string; now: number }): Promise<boolean> {
    return (await this.db.query(UserUpdatePassword, [params.userId, params.passwordHash, params.now])).rowCount === 1;
  }

  async sessionInsert(s: SessionRow): Promise<void> {
    await this.db.query(SessionInsert, [s.tokenHash, s.userId, s.csrfToken, s.createdAt, s.expiresAt]);
  }

  async sessionGet(params: { tokenHash: Buffer; now: number }): Promise<{ session: SessionRow; user: UserRow } | null> {
    const row = (await this.db.rows<Record<string, unknown>>(SessionGet, [params.tokenHash, params.now]))[0];
    return row ? sessionFromRow(row) : null;
  }

  async sessionDelete(tokenHash: Buffer): Promise<void> {
    await this.db.query(SessionDelete, [tokenHash]);
  }

  async sessionDeleteByUser(params: { userId: string; keepTokenHash: Buffer | null }): Promise<void> {
    await this.db.query(SessionDeleteByUser, [params.userId, params.keepTokenHash]);
  }

  async sessionDeleteExpired(now: number): Promise<number> {
    return (await this.db.query(SessionDeleteExpired, [now])).rowCount ?? 0;
  }

  async apiKeyInsert(key: ApiKeyRow & { hash: Buffer }): Promise<void> {
    await this.db.query(ApiKeyInsert, [key.id, key.projectId, key.name, key.hash, key.prefix, key.createdAt, key.lastUsedAt, key.revokedAt]);
  }

  /** Every API request looks its key up: from the cache. */
  apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null> {
    return this.cached.principal(hash);
  }

  async apiKeyGet(keyId: string): Promise<ApiKeyRow | null> {
    return (await this.db.rows<ApiKeyRow>(ApiKeyGet, [keyId]))[0] ?? null;
  }

  async apiKeyListByProject(projectId: string): Promise<ApiKeyRow[]> {
    return this.db.rows<ApiKeyRow>(ApiKeyListByProject, [projectId]);
  }

  async apiKeyRevoke(params: { keyId: string; now: number }): Promise<ApiKeyRow | null> {
    return this.cached.change(async (client) => (await this.db.rows<ApiKeyRow>(ApiKeyRevoke, [params.keyId, params.now], client))[0] ?? null);
  }

  async apiKeyTouch(params: { keyId: string; now: number }): Promise<void> {
    this.cached.touchKey(params.keyId, params.now);
    await this.db.query(ApiKeyTouch, [params.keyId, params.now]);
  }
}
