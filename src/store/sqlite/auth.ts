/**
 * Users, sessions and API keys in the embedded store (../auth-store.ts): reads on the reader
 * connection, a key's principal through the read cache, writes on the writer thread (auth-writes.ts).
 */
import type { ApiKeyPrincipal, ApiKeyRow, AuthStore, SessionRow, UserRow, UserWithPassword } from '../auth-store.js';
import { sessionFromRow, userFromRow } from '../session-row.js';
import * as authWrites from './auth-writes.js';
import type { CachedReads } from './cached-reads.js';
import { ApiKeyGet, ApiKeyListByProject, SessionGet, UserCount, UserGet, UserGetByEmail, UserGetPasswordHash, UserList } from './queries/auth.js';
import type { Sql } from './sql.js';
import type { SqliteWriter } from './writer.js';

export class SqliteAuth implements AuthStore {
  constructor(
    private readonly sql: Sql,
    private readonly writer: SqliteWriter,
    private readonly cached: CachedReads,
  ) {}

  userInsert(user: UserWithPassword): Promise<boolean> {
    return this.writer.run(authWrites.userInsert, user);
  }

  async userGet(userId: string): Promise<UserRow | null> {
    const row = this.sql(UserGet).get(userId) as UserRow | undefined;
    return row ? userFromRow(row) : null;
  }

  async userGetByEmail(email: string): Promise<UserWithPassword | null> {
    const row = this.sql(UserGetByEmail).get(email.toLowerCase()) as UserWithPassword | undefined;
    return row ? userFromRow(row) : null;
  }

  async userGetPasswordHash(userId: string): Promise<string | null> {
    return (this.sql(UserGetPasswordHash).get(userId) as { passwordHash: string } | undefined)?.passwordHash ?? null;
  }

  async userList(): Promise<UserRow[]> {
    return (this.sql(UserList).all() as UserRow[]).map(userFromRow);
  }

  async userCount(): Promise<number> {
    return (this.sql(UserCount).get() as { n: number }).n;
  }

  userUpdatePassword(params: { userId: string; passwordHash: string; now: number }): Promise<boolean> {
    return this.writer.run(authWrites.userUpdatePassword, params);
  }

  sessionInsert(session: SessionRow): Promise<void> {
    return this.writer.run(authWrites.sessionInsert, session);
  }

  async sessionGet(params: { tokenHash: Buffer; now: number }): Promise<{ session: SessionRow; user: UserRow } | null> {
    const row = this.sql(SessionGet).get(params) as Record<string, unknown> | undefined;
    return row ? sessionFromRow(row) : null;
  }

  sessionDelete(tokenHash: Buffer): Promise<void> {
    return this.writer.run(authWrites.sessionDelete, { tokenHash });
  }

  sessionDeleteByUser(params: { userId: string; keepTokenHash: Buffer | null }): Promise<void> {
    return this.writer.run(authWrites.sessionDeleteByUser, params);
  }

  sessionDeleteExpired(now: number): Promise<number> {
    return this.writer.run(authWrites.sessionDeleteExpired, { now });
  }

  apiKeyInsert(key: ApiKeyRow & { hash: Buffer }): Promise<void> {
    return this.writer.run(authWrites.apiKeyInsert, key);
  }

  /** Every API request looks its key up: from the cache. */
  async apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null> {
    return this.cached.principal(hash);
  }

  async apiKeyGet(keyId: string): Promise<ApiKeyRow | null> {
    return (this.sql(ApiKeyGet).get(keyId) as ApiKeyRow | undefined) ?? null;
  }

  async apiKeyListByProject(projectId: string): Promise<ApiKeyRow[]> {
    return this.sql(ApiKeyListByProject).all(projectId) as ApiKeyRow[];
  }

  apiKeyRevoke(params: { keyId: string; now: number }): Promise<ApiKeyRow | null> {
    return this.cached.afterCommit(this.writer.run(authWrites.apiKeyRevoke, params));
  }

  apiKeyTouch(params: { keyId: string; now: number }): Promise<void> {
    this.cached.touchKey(params.keyId, params.now);
    return this.writer.run(authWrites.apiKeyTouch, params);
  }
}
