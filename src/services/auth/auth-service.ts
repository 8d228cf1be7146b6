import { createHash, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { hashApiKey, looksLikeApiKey, sameHash } from '../../crypto/api-keys.js';
import { looksLikeCallbackToken } from '../../crypto/callback-tokens.js';
import { UnauthorizedError } from '../../errors.js';
import type { Plan } from '../../plans.js';
import type { ApiKeyPrincipal, Store, TeamRow } from '../../store/store.js';

/** lastUsedAt is written at most this often per key, so authentication stays a read. */
const KEY_TOUCH_INTERVAL_MS = 60_000;

function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer[ ]+(\S+)[ ]*$/i.exec(header);
  return match ? match[1]! : null;
}

export const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

export type AuthenticatedKey = ApiKeyPrincipal & { plan: Plan };

/** Hashes of keys that matched a stored key, kept so that a busy client's key is hashed once, not per request. */
const KNOWN_KEY_HASHES_MAX = 10_000;

export class AuthService {
  constructor(
    private readonly deps: {
      store: Store;
      clock: Clock;
      planOf: (team: TeamRow) => Plan;
      adminTokenHash: Buffer;
      onBackgroundError: (error: unknown) => void;
    },
  ) {}

  /**
   * Token to SHA-256, for keys that matched a stored key. A key's hash never changes, so this
   * needs no invalidation: revocation, like every other change, is seen by the lookup by hash
   * that follows, which is the store's (cached and invalidated there). Only keys that matched are
   * kept, so guessed keys cannot fill it; at the cap it starts over.
   */
  private readonly knownKeyHashes = new Map<string, Buffer>();

  async authenticateApiKey(authorization: string | undefined): Promise<AuthenticatedKey> {
    const token = bearerToken(authorization);
    if (!token) throw new UnauthorizedError('Send your API key as "Authorization: Bearer pk_…"');
    if (!looksLikeApiKey(token)) throw new UnauthorizedError(this.notAnApiKey(token));
    const known = this.knownKeyHashes.get(token);
    const hash = known ?? hashApiKey(token);
    const principal = await this.deps.store.apiKeyFindByHash(hash);
    // The lookup is by hash; the constant-time compare guards against a store that matched loosely.
    if (!principal || !sameHash(principal.key.hash, hash)) throw new UnauthorizedError('That API key is not valid');
    if (!known) {
      if (this.knownKeyHashes.size >= KNOWN_KEY_HASHES_MAX) this.knownKeyHashes.clear();
      this.knownKeyHashes.set(token, hash);
    }
    if (principal.key.revokedAt !== null) throw new UnauthorizedError('That API key has been revoked');
    const now = this.deps.clock.now();
    if (principal.key.lastUsedAt === null || now - principal.key.lastUsedAt >= KEY_TOUCH_INTERVAL_MS) {
      this.deps.store.apiKeyTouch({ keyId: principal.key.id, now }).catch(this.deps.onBackgroundError);
    }
    return { ...principal, plan: this.deps.planOf(principal.team) };
  }

  /**
   * Why a token that is not shaped like an API key was refused: when it is another kind of
   * Punctual credential, the answer says which and what this API takes instead (a key is never
   * hashed for this: only tokens already refused get here).
   */
  private notAnApiKey(token: string): string {
    const takesKeys = 'the job API takes a project\'s API key ("Authorization: Bearer pk_…"), made on the dashboard\'s API keys tab or with POST /manage/v1/projects/:projectId/keys';
    if (timingSafeEqual(sha256(token), this.deps.adminTokenHash)) {
      return `That is the admin token, which opens the management API (/manage/v1) and the CLI; ${takesKeys}`;
    }
    if (token.startsWith('whsec_')) return `That is a webhook secret, which signs deliveries to your receiver; ${takesKeys}`;
    if (looksLikeCallbackToken(token)) return `That is a callback token, which reports the result of its own attempt only; ${takesKeys}`;
    return 'That API key is not valid';
  }

  /** The bearer token when it is an async completion callback token (checked by the report itself, against its attempt). */
  callbackToken(authorization: string | undefined): string | null {
    const token = bearerToken(authorization);
    return token !== null && looksLikeCallbackToken(token) ? token : null;
  }

  authenticateAdmin(authorization: string | undefined): void {
    const token = bearerToken(authorization);
    if (!token) throw new UnauthorizedError('Send the admin token as "Authorization: Bearer <PUNCTUAL_ADMIN_TOKEN>"');
    if (!timingSafeEqual(sha256(token), this.deps.adminTokenHash)) {
      throw new UnauthorizedError(
        looksLikeApiKey(token)
          ? 'That is a project API key, which the job API (/api) takes; the management API takes the admin token (PUNCTUAL_ADMIN_TOKEN) or a dashboard session'
          : 'That admin token is not valid',
      );
    }
  }
}
