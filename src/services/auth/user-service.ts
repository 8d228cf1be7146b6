import type { Clock } from '../../clock.js';
import { decoyPasswordHash, generatePassword, hashPassword, PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, verifyPassword } from '../../crypto/passwords.js';
import { newUserId } from '../../crypto/random-ids.js';
import { InvalidRequestError, NotFoundError, RateLimitedError, UnauthorizedError } from '../../errors.js';
import type { Store, UserRow, UserWithPassword } from '../../store/store.js';
import { formatTimestamp } from '../../timestamp.js';
import type { LoginThrottle } from './login-throttle.js';

const EMAIL_MAX = 254;
/**
 * Deliberately loose (admin@localhost is a fine address here): the address is a login name, never
 * mailed. No control characters: PostgreSQL refuses U+0000 in a query parameter, and no account
 * could have one.
 */
const EMAIL_SHAPE = /^[^\s@\p{Cc}]+@[^\s@\p{Cc}]+$/u;

function userView(user: UserRow, teamIds: string[]) {
  return { userId: user.id, email: user.email, operator: user.isOperator, teams: teamIds, createdAt: formatTimestamp(user.createdAt) };
}

function readEmail(value: unknown): string {
  if (typeof value !== 'string' || value.length > EMAIL_MAX || !EMAIL_SHAPE.test(value.trim())) {
    throw new InvalidRequestError('email must be an email address', { field: 'email' });
  }
  return value.trim().toLowerCase();
}

function readNewPassword(value: unknown, field = 'password'): string {
  if (typeof value !== 'string' || value.length < PASSWORD_MIN_LENGTH || value.length > PASSWORD_MAX_LENGTH) {
    throw new InvalidRequestError(`${field} must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`, { field });
  }
  return value;
}

/** Dashboard users: creating them (CLI, first start), their teams, logging in and changing passwords. */
export class UserService {
  constructor(private readonly deps: { store: Store; clock: Clock; throttle: LoginThrottle }) {}

  /** A user in the given teams; with no password given, one is generated and returned (shown once). */
  async create(input: { email: unknown; password?: unknown; teamIds: string[]; operator: boolean }) {
    const email = readEmail(input.email);
    const generated = input.password === undefined ? generatePassword() : null;
    const password = generated ?? readNewPassword(input.password);
    for (const teamId of input.teamIds) {
      if (!(await this.deps.store.teamGet(teamId))) throw new NotFoundError(`No team ${teamId}`, { field: 'team' });
    }
    const now = this.deps.clock.now();
    const user: UserRow = { id: newUserId(), email, isOperator: input.operator, createdAt: now, updatedAt: now };
    if (!(await this.deps.store.userInsert({ ...user, passwordHash: await hashPassword(password) }))) {
      throw new InvalidRequestError(`A user with the email ${email} exists already`, { field: 'email' });
    }
    for (const teamId of input.teamIds) await this.deps.store.teamMembershipInsert({ userId: user.id, teamId, now });
    return { ...userView(user, input.teamIds), ...(generated !== null && { password: generated }) };
  }

  async addToTeam(email: unknown, teamId: string) {
    const user = await this.requireByEmail(email);
    if (!(await this.deps.store.teamGet(teamId))) throw new NotFoundError(`No team ${teamId}`, { field: 'team' });
    await this.deps.store.teamMembershipInsert({ userId: user.id, teamId, now: this.deps.clock.now() });
    return this.view(user);
  }

  async list() {
    const users = await this.deps.store.userList();
    return { users: await Promise.all(users.map((user) => this.view(user))) };
  }

  /** The operator's reset (CLI): a new password, generated unless given; every session of the user ends. */
  async resetPassword(email: unknown, password: unknown) {
    const user = await this.requireByEmail(email);
    const generated = password === undefined ? generatePassword() : null;
    const chosen = generated ?? readNewPassword(password);
    await this.deps.store.userUpdatePassword({ userId: user.id, passwordHash: await hashPassword(chosen), now: this.deps.clock.now() });
    await this.deps.store.sessionDeleteByUser({ userId: user.id, keepTokenHash: null });
    return { ...(await this.view(user)), ...(generated !== null && { password: generated }) };
  }

  private async requireByEmail(email: unknown): Promise<UserRow> {
    const user = await this.deps.store.userGetByEmail(readEmail(email));
    if (!user) throw new NotFoundError(`No user ${String(email)}`, { field: 'email' });
    return user;
  }

  private async view(user: UserRow) {
    return userView(user, (await this.deps.store.teamListByUser(user.id)).map((t) => t.id));
  }

  /**
   * Lets a password check through the login throttle (see LoginThrottle), or refuses it with 429
   * and Retry-After before the password is even looked at, so a delayed account cannot be probed.
   */
  private reserveAttempt(account: string, address: string, refusal: string, field?: string) {
    const reservation = this.deps.throttle.reserve(account, address);
    if ('attempt' in reservation) return reservation.attempt;
    const wait = reservation.retryAfterSeconds;
    throw new RateLimitedError(
      `${refusal} Try again in ${wait} second${wait === 1 ? '' : 's'}.`,
      field === undefined ? {} : { field },
      { 'retry-after': String(wait) },
    );
  }

  /**
   * The user whose password this is. Throttled per account and address before the password is
   * even checked; the same answer for an unknown email and a wrong password, after the same scrypt
   * work. The attempt is counted as a failure before anything is awaited and forgiven only if the
   * password is right, so parallel guesses cannot all pass the throttle's check at once.
   */
  async authenticate(emailInput: string, password: string, address: string): Promise<UserRow> {
    const email = emailInput.trim().toLowerCase();
    const attempt = this.reserveAttempt(email, address, 'Too many failed logins for this account or from your address.');
    let found: UserWithPassword | null;
    let ok: boolean;
    try {
      // Text that is no email is looked up nowhere, so it answers as an unknown email on both stores.
      found = email.length <= EMAIL_MAX && EMAIL_SHAPE.test(email) ? await this.deps.store.userGetByEmail(email) : null;
      ok = await verifyPassword(password.slice(0, PASSWORD_MAX_LENGTH * 4), found?.passwordHash ?? (await decoyPasswordHash()));
    } catch (error) {
      this.deps.throttle.release(attempt);
      throw error;
    }
    if (!found || !ok) throw new UnauthorizedError('Wrong email or password');
    this.deps.throttle.succeeded(attempt);
    const { passwordHash: _hash, ...user } = found;
    return user;
  }

  /**
   * Needs the current password, checked through the same throttle (and buckets) as a login for
   * this account from this address: a stolen session must not be a way to guess the password
   * without limit. Every other session of the user ends (the one in use stays).
   */
  async changePassword(
    user: Pick<UserRow, 'id' | 'email'>,
    input: { current: unknown; next: unknown; confirm: unknown },
    from: { address: string; keepTokenHash: Buffer | null },
  ) {
    const attempt = this.reserveAttempt(user.email, from.address, 'Too many wrong passwords.', 'current');
    let ok: boolean;
    try {
      const stored = await this.deps.store.userGetPasswordHash(user.id);
      if (stored === null) throw new NotFoundError('No such user');
      ok = typeof input.current === 'string' && (await verifyPassword(input.current.slice(0, PASSWORD_MAX_LENGTH * 4), stored));
    } catch (error) {
      this.deps.throttle.release(attempt);
      throw error;
    }
    if (!ok) throw new InvalidRequestError('The current password is not right', { field: 'current' });
    this.deps.throttle.succeeded(attempt);
    const next = readNewPassword(input.next, 'next');
    if (input.confirm !== next) throw new InvalidRequestError('The two new passwords differ', { field: 'confirm' });
    await this.deps.store.userUpdatePassword({ userId: user.id, passwordHash: await hashPassword(next), now: this.deps.clock.now() });
    await this.deps.store.sessionDeleteByUser({ userId: user.id, keepTokenHash: from.keepTokenHash });
  }
}
