import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { SessionRow, Store, UserRow } from '../../store/store.js';
import { sha256 } from './auth-service.js';

/**
 * Dashboard sessions, kept in the database so every instance on one PostgreSQL knows them. The
 * cookie carries 256 random bits; the table holds only their SHA-256. A session lasts a working
 * day from login (absolute, never extended), and logging in always starts a new one.
 */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** The dashboard's session cookie; /manage/v1 accepts it too (SPEC section 7). */
export const SESSION_COOKIE = 'punctual_session';
/** Where a script using a dashboard session sends the session's CSRF token on state-changing requests. */
export const CSRF_HEADER = 'x-csrf-token';
/** Methods that change nothing, so a session's request with one needs no CSRF token. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface ActiveSession {
  session: SessionRow;
  user: UserRow;
}

export class SessionService {
  constructor(private readonly deps: { store: Store; clock: Clock }) {}

  async start(userId: string): Promise<{ token: string; session: SessionRow }> {
    const now = this.deps.clock.now();
    const token = randomBytes(32).toString('base64url');
    const session: SessionRow = {
      tokenHash: sha256(token),
      userId,
      csrfToken: randomBytes(32).toString('base64url'),
      createdAt: now,
      expiresAt: now + SESSION_TTL_MS,
    };
    await this.deps.store.sessionInsert(session);
    // Expired rows are swept here, at the rare moment a session begins, rather than by a timer.
    await this.deps.store.sessionDeleteExpired(now);
    return { token, session };
  }

  async find(token: string | undefined): Promise<ActiveSession | null> {
    if (!token || token.length > 100) return null;
    return this.deps.store.sessionGet({ tokenHash: sha256(token), now: this.deps.clock.now() });
  }

  async end(token: string | undefined): Promise<void> {
    if (token && token.length <= 100) await this.deps.store.sessionDelete(sha256(token));
  }

  /** The synchronizer-token check for state-changing requests, in constant time. */
  static csrfMatches(session: SessionRow, sent: unknown): boolean {
    if (typeof sent !== 'string') return false;
    const expected = Buffer.from(session.csrfToken);
    const given = Buffer.from(sent);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
