import { Redis } from 'ioredis';
import { decision, decisionInRow, MemoryRateLimiter, MILLI_PER_TOKEN, refill, type BucketRate, type RateDecision, type RateLimiter } from './token-bucket.js';

/**
 * The token bucket of token-bucket.ts, kept in Redis so that one limit holds across instances.
 * The application clock is passed in, as everywhere else.
 *
 * Exact, and coalesced. Nothing is held or decided in this process: every take is decided by the
 * script against the one bucket in Redis, so instances together never admit more than one bucket
 * would, and never refuse a request one bucket would admit. A round trip per request is still the
 * cost at low rates; under load the takes of one team are grouped, the way a group commit groups
 * writes: those that arrive in one event-loop turn, or while this team's call is in flight, go to
 * Redis as ONE script call for n tokens at one `now`. The script refills the bucket, grants
 * k = min(n, whole tokens) and returns k and the tokens before the first take; the first k
 * waiting requests pass and the rest are refused, each told its own RateLimit-Remaining and
 * Retry-After (decisionInRow): exactly what n single takes in a row at that instant would have
 * been told. So a team costs one round trip per request when it is quiet and at most one per
 * event-loop turn (and per call in flight) when it is busy.
 *
 * The script repeats refill() and takeTokens() of token-bucket.ts step for step, in thousandths
 * of a token, and keeps its numbers as strings with 17 significant digits: Redis truncates Lua
 * numbers to integers on the way out, and tostring() keeps only 14 digits, either of which would
 * make the bucket in Redis differ from the same arithmetic in this process.
 */
const TAKE_SCRIPT = `
local rate = tonumber(ARGV[1])
local full = tonumber(ARGV[2]) * ${MILLI_PER_TOKEN}
local now = tonumber(ARGV[3])
local wanted = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'm', 'u')
local milli = tonumber(state[1])
local updated = tonumber(state[2])
if milli == nil or updated == nil then
  milli = full
  updated = now
elseif now > updated then
  milli = math.min(full, milli + (now - updated) * rate)
  updated = now
end
local whole = math.floor(milli / ${MILLI_PER_TOKEN})
if whole * ${MILLI_PER_TOKEN} > milli then whole = whole - 1 end
if whole < 0 then whole = 0 end
local granted = math.min(wanted, whole)
redis.call('HSET', KEYS[1], 'm', string.format('%.17g', milli - granted * ${MILLI_PER_TOKEN}), 'u', string.format('%.17g', updated))
redis.call('PEXPIRE', KEYS[1], math.ceil(full / rate) + 1000)
return {granted, string.format('%.17g', milli)}
`;

/** A Redis that does not answer within this costs a request no more than this. */
const COMMAND_TIMEOUT_MS = 200;
const WARN_EVERY_MS = 10_000;

type TakeCommand = (key: string, rate: number, burst: number, now: number, wanted: number) => Promise<[number, string]>;

/** A request waiting for its team's next call to Redis. */
interface WaitingTake {
  rate: BucketRate;
  now: number;
  resolve: (decision: RateDecision) => void;
}

/** One team's takes on their way to Redis. */
interface TeamTakes {
  waiting: WaitingTake[];
  /** A send is scheduled for the end of this event-loop turn. */
  scheduled: boolean;
  /** A call is in flight: takes arriving meanwhile wait for it to come back, then go together. */
  inFlight: boolean;
}

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  /** While Redis is unreachable each instance limits alone, as without REDIS_URL: never "reject everything". */
  private readonly fallback = new MemoryRateLimiter();
  private readonly teams = new Map<string, TeamTakes>();
  private lastWarning = Number.NEGATIVE_INFINITY;

  constructor(
    url: string,
    private readonly hooks: { onError: (error: unknown, warn: boolean) => void; onRoundTrip?: () => void },
  ) {
    this.redis = new Redis(url, {
      // Fail at once while disconnected instead of queueing requests behind a dead Redis.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: COMMAND_TIMEOUT_MS,
      // Reconnect forever, backing off to a second.
      retryStrategy: (times) => Math.min(times * 100, 1_000),
      lazyConnect: false,
    });
    this.redis.on('error', () => {});
    this.redis.defineCommand('punctualTake', { numberOfKeys: 1, lua: TAKE_SCRIPT });
  }

  /** Resolves once connected, or after `timeoutMs` (checks fall back meanwhile): true when connected. */
  ready(timeoutMs = 2_000): Promise<boolean> {
    if (this.redis.status === 'ready') return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.redis.off('ready', onReady);
        resolve(false);
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.redis.once('ready', onReady);
    });
  }

  take(key: string, rate: BucketRate, now: number): Promise<RateDecision> {
    return new Promise((resolve) => {
      let team = this.teams.get(key);
      if (!team) {
        team = { waiting: [], scheduled: false, inFlight: false };
        this.teams.set(key, team);
      }
      team.waiting.push({ rate, now, resolve });
      this.scheduleSend(key, team);
    });
  }

  private scheduleSend(key: string, team: TeamTakes): void {
    if (team.scheduled || team.inFlight) return;
    team.scheduled = true;
    // setImmediate, not a microtask: requests read from different connections in one turn each
    // run in a callback of their own, with the microtask queue drained after each, so only the
    // check phase that follows sees all of the turn's takes.
    setImmediate(() => void this.send(key, team));
  }

  private async send(key: string, team: TeamTakes): Promise<void> {
    team.scheduled = false;
    const batch = takeSameRateRun(team.waiting);
    const rate = batch[0]!.rate;
    // One instant for the whole batch: the latest of its requests' clocks, so that no request is
    // decided on a bucket older than the one it arrived at.
    const now = batch.reduce((latest, take) => Math.max(latest, take.now), Number.NEGATIVE_INFINITY);
    team.inFlight = true;
    let decisions: RateDecision[];
    let failure: { error: unknown } | null = null;
    try {
      this.hooks.onRoundTrip?.();
      const take = (this.redis as unknown as { punctualTake: TakeCommand }).punctualTake;
      const [granted, milliTokensBefore] = await take.call(this.redis, `punctual:rate:${key}`, rate.requestsPerSecond, rate.burst, now, batch.length);
      decisions = batch.map((_, position) => decisionInRow(Number(milliTokensBefore), granted, position, rate));
    } catch (error) {
      failure = { error };
      decisions = batch.map((waiting) => this.fallback.takeNow(key, waiting.rate, waiting.now));
    }
    team.inFlight = false;
    batch.forEach((waiting, position) => waiting.resolve(decisions[position]!));
    if (team.waiting.length > 0) this.scheduleSend(key, team);
    // A quiet team leaves nothing behind.
    else if (this.teams.get(key) === team) this.teams.delete(key);
    // Reported after the requests are answered: a hook that throws cannot leave them waiting.
    if (failure) {
      const warn = now - this.lastWarning >= WARN_EVERY_MS;
      if (warn) this.lastWarning = now;
      this.hooks.onError(failure.error, warn);
    }
  }

  /** A plain read of the bucket; the refill arithmetic is token-bucket.ts's, as in the script. */
  async peek(key: string, rate: BucketRate, now: number): Promise<RateDecision> {
    try {
      const [milliTokens, updatedAt] = await this.redis.hmget(`punctual:rate:${key}`, 'm', 'u');
      const state = milliTokens != null && updatedAt != null ? { milliTokens: Number(milliTokens), updatedAt: Number(updatedAt) } : undefined;
      const left = refill(state, rate, now).milliTokens;
      return decision(left, left >= MILLI_PER_TOKEN, rate);
    } catch {
      return this.fallback.peekNow(key, rate, now);
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/**
 * Removes and returns the takes at the head of `waiting` that share the first one's rate. A plan
 * change between two requests of one turn is rare, but a script call has one rate: the takes
 * after the change wait for the next call, so each is still decided at the rate it came with.
 */
function takeSameRateRun(waiting: WaitingTake[]): WaitingTake[] {
  const first = waiting[0]!.rate;
  const end = waiting.findIndex((take) => take.rate.requestsPerSecond !== first.requestsPerSecond || take.rate.burst !== first.burst);
  return waiting.splice(0, end === -1 ? waiting.length : end);
}
