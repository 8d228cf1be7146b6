/**
 * The embedded store's writes of API keys, users and sessions, each a function of its parameters
 * run on the writer thread inside the group's transaction, in its own savepoint (write-registry.ts
 * says how a call reaches it). The store passes the function itself:
 * `writer.run(authWrites.apiKeyInsert, params)`.
 */
import type { ApiKeyRow, SessionRow, UserWithPassword } from '../auth-store.js';
import { bumpCacheEpoch } from './cache-epoch.js';
import { ApiKeyGet, ApiKeyInsert, ApiKeyRevoke, ApiKeyTouch, SessionDelete, SessionDeleteByUser, SessionDeleteExpired, SessionInsert, UserInsert, UserUpdatePassword } from './queries/auth.js';
import type { Sql } from './sql.js';

export function apiKeyInsert(sql: Sql, key: ApiKeyRow & { hash: Uint8Array }): void {
  sql(ApiKeyInsert).run({ ...key, hash: Buffer.from(key.hash) });
}

export function apiKeyRevoke(sql: Sql, p: { keyId: string; now: number }): ApiKeyRow | null {
  if (sql(ApiKeyRevoke).run(p).changes > 0) bumpCacheEpoch(sql);
  return (sql(ApiKeyGet).get(p.keyId) as ApiKeyRow | undefined) ?? null;
}

export function apiKeyTouch(sql: Sql, p: { keyId: string; now: number }): void {
  sql(ApiKeyTouch).run(p);
}

export function userInsert(sql: Sql, user: UserWithPassword): boolean {
  return sql(UserInsert).run({ ...user, isOperator: user.isOperator ? 1 : 0 }).changes === 1;
}

export function userUpdatePassword(sql: Sql, p: { userId: string; passwordHash: string; now: number }): boolean {
  return sql(UserUpdatePassword).run(p).changes === 1;
}

export function sessionInsert(sql: Sql, session: SessionRow): void {
  sql(SessionInsert).run({ ...session, tokenHash: Buffer.from(session.tokenHash) });
}

export function sessionDelete(sql: Sql, p: { tokenHash: Uint8Array }): void {
  sql(SessionDelete).run(Buffer.from(p.tokenHash));
}

export function sessionDeleteByUser(sql: Sql, p: { userId: string; keepTokenHash: Uint8Array | null }): void {
  sql(SessionDeleteByUser).run({ userId: p.userId, keepTokenHash: p.keepTokenHash && Buffer.from(p.keepTokenHash) });
}

export function sessionDeleteExpired(sql: Sql, p: { now: number }): number {
  return sql(SessionDeleteExpired).run(p.now).changes;
}
