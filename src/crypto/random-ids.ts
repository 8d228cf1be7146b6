import { randomFillSync } from 'node:crypto';

const BASE62 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/**
 * CSPRNG bytes drawn 4 KB at a time and handed out once each, as crypto.randomUUID does with its
 * cache: one call into OpenSSL per ~90 ids instead of one per id (it showed as 3% of the server's
 * CPU in the end-to-end benchmark's profile).
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

/** Unbiased base62 from the CSPRNG (rejection sampling: bytes >= 248 are dropped). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < 248) out += BASE62[byte % 62];
  }
  return out;
}

const HEX = '0123456789abcdef';

/**
 * A W3C Trace Context span id: 16 lower-case hex digits from the CSPRNG, never all zeros (which the
 * spec reserves for "invalid").
 */
export function newSpanId(): string {
  for (;;) {
    let out = '';
    let zero = true;
    for (let i = 0; i < 8; i += 1) {
      const byte = randomByte();
      if (byte !== 0) zero = false;
      out += HEX[byte >> 4]! + HEX[byte & 15]!;
    }
    if (!zero) return out;
  }
}

/** Digits, then upper, then lower case: base62 in ASCII order, so fixed-width numbers sort as text. */
const SORTABLE_BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The millisecond as 8 sortable base62 characters (good until the year 8888). */
function timePrefix(ms: number): string {
  let out = '';
  for (let n = ms; out.length < 8; n = Math.floor(n / 62)) out = SORTABLE_BASE62[n % 62] + out;
  return out;
}

/**
 * A time prefix then 22 random base62 characters (130 random bits, over the 96 the contract asks
 * of a jobId). Ids created close together share index pages, so inserting one writes a page
 * already in cache instead of a random one: the benchmark measured WAL bytes per job falling by
 * about half (BENCHMARKS.md). The cost: an id tells when its job was created, as createdAt does.
 */
export const newJobId = (now: number = Date.now()): string => `job_${timePrefix(now)}${randomBase62(22)}`;
export const newAttemptId = (now: number = Date.now()): string => `att_${timePrefix(now)}${randomBase62(22)}`;
/**
 * The attempt ids of one claim that starts jobs at once: this prefix (time and 16 random
 * characters, like newAttemptId's) and the job's seq, unique because a seq is.
 */
export const attemptIdPrefix = (now: number = Date.now()): string => `att_${timePrefix(now)}${randomBase62(16)}`;
export const newTeamId = (): string => `team_${randomBase62(16)}`;
export const newProjectId = (): string => `prj_${randomBase62(16)}`;
export const newKeyId = (): string => `key_${randomBase62(16)}`;
export const newSecretId = (): string => `whs_${randomBase62(16)}`;
export const newTestJobId = (): string => `job_test_${randomBase62(22)}`;
export const newScheduleId = (): string => `sch_${randomBase62(22)}`;
export const newUserId = (): string => `usr_${randomBase62(16)}`;
export const newEventId = (now: number = Date.now()): string => `evt_${timePrefix(now)}${randomBase62(22)}`;
