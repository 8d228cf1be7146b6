import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { UnavailableError } from '../errors.js';
import { randomBase62 } from './random-ids.js';

/**
 * Dashboard passwords, hashed with scrypt (node:crypto) and a 16-byte random salt. The cost
 * parameters are stored with each hash (`scrypt$N$r$p$salt$hash`, base64), so raising them later
 * leaves existing hashes verifiable. N=2^15, r=8 costs 32 MiB and roughly 50-100 ms per hash: slow
 * enough to make a stolen table expensive to crack, fast enough for a login. scrypt runs on libuv's
 * thread pool, so a login never blocks the event loop that delivers webhooks (nor, with the slots
 * below, the pool's threads that its DNS lookups need).
 */
const COST = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const SALT_BYTES = 16;
/** scrypt needs 128·N·r bytes; Node's default cap is exactly 32 MiB, too tight for N=2^15. */
const MAX_MEMORY = 64 * 1024 * 1024;

export const PASSWORD_MIN_LENGTH = 10;
/** Longer input costs scrypt nothing much, but a cap keeps request bodies honest. */
export const PASSWORD_MAX_LENGTH = 200;

/**
 * scrypt shares libuv's thread pool (UV_THREADPOOL_SIZE, 4 by default) with dns.lookup, which
 * every webhook delivery calls, and the pool serves its queue first come, first served: a flood of
 * logins would put hundreds of 50-100 ms hashes ahead of a delivery's lookup. So at most one
 * thread fewer than the pool holds computes scrypt at a time; other logins wait their turn here,
 * and a lookup always finds a thread free.
 */
export const SCRYPT_CONCURRENCY = Math.max(1, (Number(process.env.UV_THREADPOOL_SIZE) || 4) - 1);

/**
 * Password checks allowed to wait for a slot. At 50-100 ms a hash, this is a second or two of
 * work; beyond it a flood only grows memory and everyone's wait, so the rest are turned away
 * (503 with Retry-After) instead of queued.
 */
export const SCRYPT_QUEUE_LIMIT = 64;

let scryptsRunning = 0;
const waitingForScrypt: (() => void)[] = [];

async function inScryptSlot<T>(task: () => Promise<T>): Promise<T> {
  if (scryptsRunning >= SCRYPT_CONCURRENCY && waitingForScrypt.length >= SCRYPT_QUEUE_LIMIT) {
    throw new UnavailableError('Too many sign-ins are being checked right now; try again in a moment', {}, { 'retry-after': '1' });
  }
  if (scryptsRunning < SCRYPT_CONCURRENCY) scryptsRunning += 1;
  // The slot is handed over by the task that finishes (the count stays as it is), so no newcomer can take it first.
  else await new Promise<void>((resolve) => waitingForScrypt.push(resolve));
  try {
    return await task();
  } finally {
    const next = waitingForScrypt.shift();
    if (next) next();
    else scryptsRunning -= 1;
  }
}

function derive(password: string, salt: Buffer, cost: { N: number; r: number; p: number }, keyLength: number): Promise<Buffer> {
  const options: ScryptOptions = { ...cost, maxmem: Math.max(MAX_MEMORY, 256 * cost.N * cost.r) };
  return inScryptSlot(
    () =>
      new Promise((resolve, reject) =>
        scrypt(password.normalize('NFC'), salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key))),
      ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, COST, KEY_LENGTH);
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Constant-time comparison of the derived key; a malformed stored hash verifies nothing. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return false;
  const salt = Buffer.from(parts[4]!, 'base64');
  const expected = Buffer.from(parts[5]!, 'base64');
  if (expected.length === 0) return false;
  const actual = await derive(password, salt, { N, r, p }, expected.length);
  return timingSafeEqual(actual, expected);
}

/**
 * A hash of a password nobody knows: logging in with an unknown email still spends one scrypt,
 * so the answer's timing does not tell which emails have accounts.
 */
let decoyHash: Promise<string> | null = null;
export function decoyPasswordHash(): Promise<string> {
  decoyHash ??= hashPassword(randomBase62(24));
  return decoyHash;
}

/** 20 base62 characters (about 119 bits): printed once by the first start and `punctual users create`. */
export const generatePassword = (): string => randomBase62(20);
