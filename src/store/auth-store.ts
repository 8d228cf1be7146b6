/**
 * The storage contract of authentication, part of Store (store.ts): dashboard users and their
 * sessions (SPEC section 7), and API keys with the principal a key authenticates as.
 */
import type { ProjectRow, TeamRow } from './tenancy-store.js';
import { methodList } from './forward-methods.js';

export interface ApiKeyRow {
  id: string;
  projectId: string;
  name: string;
  prefix: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** What authenticating with an API key yields: the key and everything a job request needs. */
export interface ApiKeyPrincipal {
  key: ApiKeyRow & { hash: Buffer };
  project: ProjectRow;
  team: TeamRow;
}

/** A dashboard user (SPEC section 7). The password hash never leaves the service layer. */
export interface UserRow {
  id: string;
  /** Lower-cased. */
  email: string;
  /** Sees and manages every team, as the admin token does. */
  isOperator: boolean;
  createdAt: number;
  updatedAt: number;
}

export interface UserWithPassword extends UserRow {
  passwordHash: string;
}

export interface SessionRow {
  /** SHA-256 of the cookie's token; the token itself is never stored. */
  tokenHash: Buffer;
  userId: string;
  /** The synchronizer token every state-changing request of this session must carry. */
  csrfToken: string;
  createdAt: number;
  expiresAt: number;
}

export interface AuthStore {
  /** False (and nothing written) when the email is taken. */
  userInsert(user: UserWithPassword): Promise<boolean>;
  userGet(userId: string): Promise<UserRow | null>;
  /** With the password hash, for logging in; `email` is matched lower-cased. */
  userGetByEmail(email: string): Promise<UserWithPassword | null>;
  userGetPasswordHash(userId: string): Promise<string | null>;
  userList(): Promise<UserRow[]>;
  userCount(): Promise<number>;
  userUpdatePassword(params: { userId: string; passwordHash: string; now: number }): Promise<boolean>;
  sessionInsert(session: SessionRow): Promise<void>;
  /** The session and its user, unless it expired by `now` or does not exist. */
  sessionGet(params: { tokenHash: Buffer; now: number }): Promise<{ session: SessionRow; user: UserRow } | null>;
  sessionDelete(tokenHash: Buffer): Promise<void>;
  /** Ends every session of a user but `keepTokenHash` (a password change logs the other browsers out). */
  sessionDeleteByUser(params: { userId: string; keepTokenHash: Buffer | null }): Promise<void>;
  sessionDeleteExpired(now: number): Promise<number>;
  apiKeyInsert(key: ApiKeyRow & { hash: Buffer }): Promise<void>;
  apiKeyFindByHash(hash: Buffer): Promise<ApiKeyPrincipal | null>;
  apiKeyGet(keyId: string): Promise<ApiKeyRow | null>;
  apiKeyListByProject(projectId: string): Promise<ApiKeyRow[]>;
  /** Revokes once: a second call keeps and returns the first revokedAt. */
  apiKeyRevoke(params: { keyId: string; now: number }): Promise<ApiKeyRow | null>;
  apiKeyTouch(params: { keyId: string; now: number }): Promise<void>;
}

/** AuthStore's methods, each driver's noun object forwards them (forward-methods.ts). */
export const AUTH_STORE_METHODS = methodList<AuthStore>()(['userInsert', 'userGet', 'userGetByEmail', 'userGetPasswordHash', 'userList', 'userCount', 'userUpdatePassword', 'sessionInsert', 'sessionGet', 'sessionDelete', 'sessionDeleteByUser', 'sessionDeleteExpired', 'apiKeyInsert', 'apiKeyFindByHash', 'apiKeyGet', 'apiKeyListByProject', 'apiKeyRevoke', 'apiKeyTouch'] as const);
