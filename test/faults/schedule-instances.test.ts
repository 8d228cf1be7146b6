import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEASE_MARGIN_MS } from '../../src/delivery/capacity-rules.js';
import { RESCUE_INTERVAL_MS } from '../../src/maintenance/lease-rescuer.js';
import { queryRows } from '../support/job-fixtures.js';
import { TEST_STORE } from '../support/make-app.js';
import { ReceiverProcess } from '../support/receiver-process.js';
import { projectByCli, runCli, sharedDatabase } from '../support/spawn-punctual.js';

const INSTANCES = 3;
const SCHEDULES = Number(process.env.SCHEDULE_FAULT_SCHEDULES ?? 200);
/** The project's delivery timeout, the shortest allowed: it sets how long a killed instance's claims are held. */
const DELIVERY_TIMEOUT_MS = 1_000;
/**
 * The project's retry delay. A job whose attempt the killed instance had started (its request may
 * have left or not) comes back when its lease runs out as a failed attempt (lease_expired) and is
 * retried after this, plus up to 10% jitter; with the default policy that is 30 s more.
 */
const RETRY_DELAY_MS = 1_000;
/** Long enough for the killed instance's schedule leases (10 s) to lapse and be caught up well before the end. */
const RUN_MS = Number(process.env.SCHEDULE_FAULT_RUN_MS ?? 30_000);
/** Only when fires are missing at the deadline: how much longer to watch for them, to tell late from never. */
const LATE_WATCH_MS = 60_000;
/** For a test (SCHEDULE_FAULT_KILL_PHASE_MS=60): the kill this many ms after a whole second, when the instance is sending that second's jobs. */
const KILL_PHASE_MS = process.env.SCHEDULE_FAULT_KILL_PHASE_MS === undefined ? null : Number(process.env.SCHEDULE_FAULT_KILL_PHASE_MS);

interface Arrival {
  jobId: string;
  arrivedAt: number;
  scheduleId: string | null;
  scheduledFor: string | null;
}

/**
 * SPEC section 9's promise under faults: three `punctual serve` processes on one PostgreSQL, 200
 * every-second schedules (catchUp "all") for 30 s, one instance killed with SIGKILL a third of
 * the way in and started again: every schedule has exactly one job for every second of the run,
 * none delivered before its second, none missed, none doubled.
 */
describe.runIf(TEST_STORE === 'postgres')('schedules on three instances, one killed', () => {
  const database = sharedDatabase('SIGKILL');
  let receiver: ReceiverProcess;

  beforeAll(async () => {
    receiver = await new ReceiverProcess().start();
    await database.setUp();
  });
  afterAll(async () => {
    await database.tearDown();
    await receiver.stop();
  });

  it(`fires ${SCHEDULES} every-second schedules once per second each, through a kill -9`, { timeout: RUN_MS + 90_000 + LATE_WATCH_MS }, async () => {
    const env = { DATABASE_URL: database.url, PUNCTUAL_SECRET_KEY: 'schedule-fault-secret-key-0123456789', PUNCTUAL_ADMIN_TOKEN: 'schedule-fault-admin-0123', LOG_LEVEL: 'warn' };
    const { key, projectId } = projectByCli(env, receiver.url);
    // Jobs the killed instance had claimed go back to the queue when their lease lapses (the
    // delivery timeout + 30 s): the shortest timeout, and a short retry delay for those it had
    // started, keep that within the run's wait below.
    const settings = { deliveryTimeoutMs: DELIVERY_TIMEOUT_MS, retryPolicy: { initialDelayMs: RETRY_DELAY_MS, maxDelayMs: RETRY_DELAY_MS } };
    expect(runCli(['projects', 'update', projectId, '--json', JSON.stringify(settings)], env).status).toBe(0);
    const start = () => database.start(env);
    const instances = [];
    for (let i = 0; i < INSTANCES; i++) instances.push(await start());

    const scheduleIds: string[] = [];
    for (let i = 0; i < SCHEDULES; i++) {
      const res = await fetch(`${instances[i % INSTANCES]!.base}/api/schedules`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ cron: '* * * * * *', catchUp: 'all', payload: { i } }),
      });
      expect(res.status).toBe(201);
      scheduleIds.push(((await res.json()) as { scheduleId: string }).scheduleId);
    }
    // Every schedule exists from here on: each second after it has a fire.
    const firstSecond = Math.ceil(Date.now() / 1000) * 1000;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

    await sleep(RUN_MS / 3);
    if (KILL_PHASE_MS !== null) await sleep(Math.ceil((Date.now() + 500) / 1000) * 1000 + KILL_PHASE_MS - Date.now());
    const killed = instances[0]!.server;
    await killed.stop('SIGKILL');
    const killedAt = Date.now();
    await sleep(5_000);
    instances[0] = await start();
    await sleep((2 * RUN_MS) / 3 - 5_000);

    // The last second counted: late enough for fires missed while a killed instance held their
    // schedules (a 10 s lease) to have been caught up. Once every schedule has moved past it (all
    // its fires created; a loaded machine can make that take a few seconds), the schedules are
    // paused, not deleted: a deletion cancels the schedule's QUEUED jobs (SPEC section 9), and a
    // fire of the window may still be QUEUED then, waiting for a retry after a failed attempt.
    const lastSecond = Math.floor(Date.now() / 1000) * 1000 - 3_000;
    const behind = async () => (await queryRows<{ n: string }>(database.url, 'SELECT count(*) AS n FROM schedules WHERE next_run_at <= $1', [lastSecond]))[0]!.n;
    for (const until = Date.now() + 30_000; Number(await behind()) > 0 && Date.now() < until; ) await sleep(200);
    const schedulesBeforePause = await queryRows<ScheduleState>(database.url, 'SELECT id, next_run_at, last_run_at, firing_until FROM schedules');
    const pausedAt = Date.now();
    for (const [i, scheduleId] of scheduleIds.entries()) {
      const res = await fetch(`${instances[i % INSTANCES]!.base}/api/schedules/${scheduleId}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ paused: true }),
      });
      expect(res.status).toBe(200);
    }
    const expected = SCHEDULES * ((lastSecond - firstSecond) / 1000 + 1);
    const inWindow = async () =>
      (await receiver.arrivals()).filter((a) => a.scheduleId !== null && Date.parse(a.scheduledFor!) >= firstSecond && Date.parse(a.scheduledFor!) <= lastSecond);
    // The last of the killed instance's claims lapses a delivery timeout and the lease margin after
    // the kill at most, the next rescue pass (each instance's, every 5 s) returns it to the queue:
    // due at once if its attempt had not started, after the retry delay if it had; then delivered.
    const rescuedBy = killedAt + DELIVERY_TIMEOUT_MS + LEASE_MARGIN_MS + RESCUE_INTERVAL_MS + RETRY_DELAY_MS * 1.1;
    const deadline = Math.max(Date.now() + 30_000, rescuedBy + 5_000);
    while (new Set((await inWindow()).map((a) => a.jobId)).size < expected && Date.now() < deadline) await sleep(200);
    await sleep(1_000);

    const arrivals = await inWindow();
    // One job per schedule and second: every fire of the window has exactly one job.
    const jobsPerFire = new Map<string, Set<string>>();
    for (const a of arrivals) {
      const fire = `${a.scheduleId} ${a.scheduledFor}`;
      jobsPerFire.set(fire, (jobsPerFire.get(fire) ?? new Set()).add(a.jobId));
    }
    const missing: Fire[] = [];
    for (const scheduleId of scheduleIds) {
      for (let second = firstSecond; second <= lastSecond; second += 1000) {
        if (!jobsPerFire.has(`${scheduleId} ${new Date(second).toISOString()}`)) missing.push({ scheduleId, at: second });
      }
    }
    if (missing.length > 0) {
      const report = await explainMissing(missing, {
        databaseUrl: database.url,
        arrivals: () => receiver.arrivals(),
        sleep,
        schedulesBeforePause,
        times: { firstSecond, lastSecond, killedAt, pausedAt, deadline },
        logs: [`killed instance: ${killed.output()}`, ...instances.map((instance, i) => `instance ${i}: ${instance.server.output()}`)],
      });
      expect.fail(report);
    }
    expect([...jobsPerFire.values()].filter((jobs) => jobs.size !== 1)).toEqual([]);
    expect(jobsPerFire.size).toBe(expected);
    // Never early.
    expect(arrivals.filter((a) => a.arrivedAt < Date.parse(a.scheduledFor!))).toEqual([]);
    const lateness = arrivals.map((a) => a.arrivedAt - Date.parse(a.scheduledFor!)).sort((a, b) => a - b);
    const at = (q: number) => lateness[Math.min(lateness.length - 1, Math.floor(q * lateness.length))]!;
    console.log(`schedules: ${SCHEDULES} every-second schedules on ${INSTANCES} instances, ${jobsPerFire.size} fires: lateness p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${lateness.at(-1)} ms (fires caught up after the kill included)`);
  });
});

interface Fire {
  scheduleId: string;
  at: number;
}

interface ScheduleState {
  id: string;
  next_run_at: string | null;
  last_run_at: string | null;
  firing_until: string | null;
}

interface JobState {
  id: string;
  schedule_id: string;
  schedule_fire_at: string;
  status: string;
  run_at: string;
  created_at: string;
  updated_at: string;
  attempt_count: number;
  lease_owner: string | null;
  lease_expires_at: string | null;
  cancelled_at: string | null;
}

interface AttemptState {
  job_id: string;
  attempt_number: number;
  started_at: string;
  finished_at: string | null;
  outcome: string | null;
  status_code: number | null;
  error: string | null;
}

/**
 * Why each missing fire has no delivery by the deadline, read from the database and from the
 * receiver over LATE_WATCH_MS more: never created (with its schedule's state before the pause),
 * created and delivered late (when, and its attempts), or created and not delivered (its status,
 * attempts and lease). Times are shown both as instants and relative to the kill.
 */
async function explainMissing(
  missing: Fire[],
  context: {
    databaseUrl: string;
    arrivals: () => Promise<Arrival[]>;
    sleep: (ms: number) => Promise<unknown>;
    schedulesBeforePause: ScheduleState[];
    times: { firstSecond: number; lastSecond: number; killedAt: number; pausedAt: number; deadline: number };
    logs: string[];
  },
): Promise<string> {
  const { killedAt, pausedAt, deadline, firstSecond, lastSecond } = context.times;
  const when = (t: string | number | null | undefined) => {
    if (t === null || t === undefined) return 'never';
    const ms = Number(t);
    return `${new Date(ms).toISOString()} (kill ${ms >= killedAt ? '+' : '-'}${Math.abs(ms - killedAt)} ms)`;
  };
  const key = (scheduleId: string | null, at: string | number) => `${scheduleId} ${new Date(Number.isFinite(Number(at)) ? Number(at) : Date.parse(String(at))).toISOString()}`;
  const wanted = new Set(missing.map((fire) => key(fire.scheduleId, fire.at)));
  // Watch on: a fire delivered after the deadline is late, not lost.
  const watchUntil = Date.now() + LATE_WATCH_MS;
  let late = new Map<string, Arrival>();
  for (;;) {
    late = new Map((await context.arrivals()).filter((a) => wanted.has(key(a.scheduleId, a.scheduledFor!))).map((a) => [key(a.scheduleId, a.scheduledFor!), a]));
    if (late.size === wanted.size || Date.now() > watchUntil) break;
    await context.sleep(500);
  }
  const scheduleIds = [...new Set(missing.map((fire) => fire.scheduleId))];
  const jobs = await queryRows<JobState>(
    context.databaseUrl,
    `SELECT id, schedule_id, schedule_fire_at, status, run_at, created_at, updated_at, attempt_count, lease_owner, lease_expires_at, cancelled_at
     FROM jobs WHERE schedule_id = ANY($1)`,
    [scheduleIds],
  );
  const jobOf = new Map(jobs.map((job) => [key(job.schedule_id, job.schedule_fire_at), job]));
  const attempts = await queryRows<AttemptState>(
    context.databaseUrl,
    'SELECT job_id, attempt_number, started_at, finished_at, outcome, status_code, error FROM attempts WHERE job_id = ANY($1) ORDER BY started_at',
    [jobs.filter((job) => wanted.has(key(job.schedule_id, job.schedule_fire_at))).map((job) => job.id)],
  );
  const scheduleOf = new Map(context.schedulesBeforePause.map((s) => [s.id, s]));

  const counts = { 'never created': 0, 'created, delivered late': 0, 'created, not delivered': 0 };
  const lines: string[] = [];
  for (const fire of missing) {
    const job = jobOf.get(key(fire.scheduleId, fire.at));
    const arrival = late.get(key(fire.scheduleId, fire.at));
    const verdict = !job ? 'never created' : arrival ? 'created, delivered late' : 'created, not delivered';
    counts[verdict] += 1;
    if (lines.length >= 20 * 4) continue;
    lines.push(`- schedule ${fire.scheduleId}, fire ${when(fire.at)}: ${verdict}`);
    if (!job) {
      const s = scheduleOf.get(fire.scheduleId);
      lines.push(`    schedule before the pause: next_run_at ${when(s?.next_run_at)}, last_run_at ${when(s?.last_run_at)}, firing_until ${when(s?.firing_until)}`);
      continue;
    }
    lines.push(
      `    job ${job.id} ${job.status}: created ${when(job.created_at)}, run_at ${when(job.run_at)}, attempts ${job.attempt_count}, lease ${job.lease_owner ?? 'none'} until ${when(job.lease_expires_at)}` +
        (job.cancelled_at !== null ? `, cancelled ${when(job.cancelled_at)}${Number(job.cancelled_at) >= pausedAt ? " (by its schedule's pause)" : ''}` : ''),
    );
    for (const a of attempts.filter((row) => row.job_id === job.id)) {
      lines.push(`    attempt ${a.attempt_number}: started ${when(a.started_at)}, finished ${when(a.finished_at)}, ${a.outcome ?? 'in flight'}${a.status_code ? ` ${a.status_code}` : ''}${a.error ? `: ${a.error}` : ''}`);
    }
    if (arrival) lines.push(`    arrived ${when(arrival.arrivedAt)}, ${arrival.arrivedAt - deadline} ms after the deadline`);
  }
  const rescues = context.logs.flatMap((log) => log.split('\n').filter((line) => /lease|rescue/i.test(line)).map((line) => `  ${log.slice(0, log.indexOf(':'))}: ${line}`));
  return [
    `${missing.length} fires without a delivery by the deadline: ${Object.entries(counts).map(([verdict, n]) => `${n} ${verdict}`).join(', ')}`,
    `window ${when(firstSecond)} .. ${when(lastSecond)}, schedules paused from ${when(pausedAt)}, deadline ${when(deadline)}, watched until ${when(Date.now())}`,
    ...lines,
    ...(rescues.length > 0 ? ['instance logs about leases:', ...rescues.slice(0, 20)] : []),
  ].join('\n');
}
