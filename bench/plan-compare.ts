/**
 * `BENCH_PLAN_COMPARE=1 npm run bench:ingest`: what a team's rate limit costs a team that stays
 * under it. Run by bench/ingest.ts on the same bench server(s), the same dispatch body and the same
 * store (SQLite by default; REDIS_URL and DATABASE_URL are passed to the servers as usual).
 *
 * Three teams of the same server: the first-start team (plan `unlimited`: no rate limit, no
 * quota), a team created through the admin API on plan `scale` (1,000 requests/s, bursts of 2,000,
 * and a monthly quota of 10,000,000 jobs), and a control team `unlimited-2`, on plan unlimited
 * too, whose difference from the first shows how far apart two identical workloads come out (the
 * noise floor of the comparison). Each created team has a project and an API key of its own.
 *
 * The teams' requests are interleaved one by one: request i goes to team i mod 3, so each team
 * gets POST /api/jobs/dispatch at BENCH_RATE (400) requests/s, below the scale plan's limit, and
 * all three meet the same machine at the same moments. (An earlier version gave each team the
 * server alone in turn, 10 s at a time: whatever else the machine did in one team's turn fell on
 * that team only, and two teams on the same plan came out up to 25 % apart at p50.) A warm-up of
 * BENCH_WARMUP (5) s, then BENCH_ROUNDS (3) rounds of BENCH_DURATION (20) s, the CPU measured per
 * round (for all teams together: it cannot be told apart per team).
 *
 * The load is open-loop: request i is sent at start + i / (3 × rate) (a 1 ms timer sends whatever
 * is due), whether or not earlier answers came back, each team over its own BENCH_CONNECTIONS (32)
 * keep-alive connections (undici Pool; with several servers, a team's requests alternate between
 * them). Latency is from the moment a request was handed to the pool to the end of its answer, in
 * µs (performance.now()), which autocannon's whole-millisecond histogram cannot resolve at these
 * latencies; its -R mode also sends each connection's share of a second in a burst at the start of
 * the second. `send lag` is how late the generator sent against the schedule.
 *
 * Printed: per round and per team the answered req/s, p50 / p90 / p99 / max, 429s and other
 * failures, and per round the CPU used per request by the server(s) and Redis; with REDIS_URL, the
 * calls to Redis per request of the scale team (from the servers' /metrics); then, all rounds
 * pooled, the difference scale vs unlimited in % for req/s, p50 and p99 (the goal: each within
 * 5 %, and no 429), and the same for unlimited-2 vs unlimited.
 */
import { Pool } from 'undici';
import { cpuLine, positiveNumber, type CpuUse } from './delivery-harness.js';
import type { Servers } from './ingest.js';

const GOAL_PCT = 5;

interface Team {
  plan: string;
  /** One pool per server. */
  pools: Pool[];
  headers: Record<string, string>;
}

interface TeamResult {
  plan: string;
  round: number;
  sent: number;
  ok: number;
  limited: number;
  failed: number;
  firstFailure: string | null;
  /** From the first scheduled send to the last answer, s. */
  seconds: number;
  /** Latency of every 2xx answer, ms. */
  latencies: Float64Array;
}

interface Round {
  round: number;
  teams: TeamResult[];
  lagP99: number;
  lagMax: number;
  sent: number;
  cpu: CpuUse;
}

const percentile = (sorted: Float64Array, q: number) =>
  sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;

/** `rate` requests/s to each team for `seconds`, open loop, interleaved request by request. */
async function paced(teams: Team[], body: string, rate: number, seconds: number, round: number) {
  const perTeam = Math.round(rate * seconds);
  const total = perTeam * teams.length;
  const interval = 1000 / (rate * teams.length);
  const results = teams.map(
    (team): TeamResult => ({ plan: team.plan, round, sent: perTeam, ok: 0, limited: 0, failed: 0, firstFailure: null, seconds: 0, latencies: new Float64Array(perTeam) }),
  );
  const lags = new Float64Array(total);
  let answered = 0;
  let lastAnswer = 0;
  const start = performance.now() + 2;
  await new Promise<void>((finish) => {
    let i = 0;
    const send = (k: number, scheduled: number) => {
      const sentAt = performance.now();
      lags[k] = sentAt - scheduled;
      const team = teams[k % teams.length]!;
      const result = results[k % teams.length]!;
      team.pools[Math.floor(k / teams.length) % team.pools.length]!
        .request({ path: '/api/jobs/dispatch', method: 'POST', headers: team.headers, body })
        .then(async (response) => {
          const text = await response.body.text();
          const at = performance.now();
          if (response.statusCode === 201) result.latencies[result.ok++] = at - sentAt;
          else if (response.statusCode === 429) result.limited += 1;
          else {
            result.failed += 1;
            result.firstFailure ??= `${response.statusCode} ${text.slice(0, 200)}`;
          }
          lastAnswer = at;
        })
        .catch((error: unknown) => {
          result.failed += 1;
          result.firstFailure ??= String(error);
          lastAnswer = performance.now();
        })
        .finally(() => {
          if (++answered === total) finish();
        });
    };
    const tick = () => {
      const now = performance.now();
      while (i < total && start + i * interval <= now) {
        send(i, start + i * interval);
        i += 1;
      }
      if (i < total) setTimeout(tick, Math.max(0, start + i * interval - performance.now()));
    };
    setTimeout(tick, 2);
  });
  for (const result of results) {
    result.seconds = (lastAnswer - start) / 1000;
    result.latencies = result.latencies.slice(0, result.ok).sort();
  }
  const sortedLags = lags.sort();
  return { teams: results, sent: total, lagP99: percentile(sortedLags, 0.99), lagMax: sortedLags[sortedLags.length - 1] ?? Number.NaN };
}

async function admin<T>(servers: Servers, method: string, path: string, body: unknown): Promise<T> {
  const response = await fetch(`${servers.origins[0]}${path}`, {
    method,
    headers: { authorization: `Bearer ${servers.info.adminToken}`, 'content-type': 'application/json' },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

const pad = (value: string | number, width: number) => String(value).padStart(width);
const f2 = (ms: number) => ms.toFixed(2);
const pct = (a: number, b: number) => ((a - b) / b) * 100;
const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(1)}%`;

function summary(plan: string, rounds: Round[]) {
  const mine = rounds.map((r) => r.teams.find((t) => t.plan === plan)!);
  const all = new Float64Array(mine.reduce((n, s) => n + s.latencies.length, 0));
  let offset = 0;
  for (const s of mine) {
    all.set(s.latencies, offset);
    offset += s.latencies.length;
  }
  all.sort();
  const seconds = mine.reduce((n, s) => n + s.seconds, 0);
  return {
    plan,
    rate: mine.reduce((n, s) => n + s.ok, 0) / seconds,
    ok: mine.reduce((n, s) => n + s.ok, 0),
    limited: mine.reduce((n, s) => n + s.limited, 0),
    failed: mine.reduce((n, s) => n + s.failed, 0),
    p50: percentile(all, 0.5),
    p90: percentile(all, 0.9),
    p99: percentile(all, 0.99),
    max: all[all.length - 1] ?? Number.NaN,
  };
}

export async function comparePlans(servers: Servers, body: string): Promise<number> {
  const rate = positiveNumber('BENCH_RATE', 400);
  const seconds = positiveNumber('BENCH_DURATION', 20);
  const warmup = positiveNumber('BENCH_WARMUP', 5);
  const rounds = Math.round(positiveNumber('BENCH_ROUNDS', 3));
  const connections = Math.round(positiveNumber('BENCH_CONNECTIONS', 32));

  const newTeam = async (name: string, plan: string) => {
    const team = await admin<{ teamId: string }>(servers, 'POST', '/manage/v1/teams', { name, plan });
    const project = await admin<{ projectId: string }>(servers, 'POST', `/manage/v1/teams/${team.teamId}/projects`, {
      name,
      webhookUrl: 'http://127.0.0.1:9/hook',
    });
    const key = await admin<{ key: string }>(servers, 'POST', `/manage/v1/projects/${project.projectId}/keys`, { name: 'bench' });
    const usage = await admin<{ plan: string; quota: number | null; rateLimit: unknown }>(servers, 'GET', `/manage/v1/teams/${team.teamId}/usage`, undefined);
    return { teamId: team.teamId, key: key.key, usage };
  };
  const scale = await newTeam('bench scale', 'scale');
  const control = await newTeam('bench control', 'unlimited');
  const plans = [
    { plan: 'unlimited', key: servers.info.apiKey },
    { plan: 'scale', key: scale.key },
    { plan: 'unlimited-2', key: control.key },
  ];
  const share = (k: number) => Math.ceil((connections - k) / servers.origins.length);
  const teams: Team[] = plans.map(({ plan, key: apiKey }) => ({
    plan,
    pools: servers.origins.map((origin, k) => new Pool(origin, { connections: share(k), pipelining: 1 })),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
  }));

  console.log(
    `plan comparison: POST /api/jobs/dispatch at ${rate} requests/s per team (open loop, the three teams' requests interleaved one by one), ` +
      `${connections} connections per team, ${warmup} s warm-up, then ${rounds} rounds of ${seconds} s; body ${Buffer.byteLength(body)} bytes`,
  );
  console.log(
    `teams: unlimited = the first-start team; scale = ${scale.teamId} on plan ${scale.usage.plan} (rateLimit ${JSON.stringify(scale.usage.rateLimit)}, ` +
      `quota ${scale.usage.quota}); unlimited-2 = ${control.teamId} on plan ${control.usage.plan}; ` +
      `REDIS_URL ${process.env.REDIS_URL ? `set (${process.env.REDIS_URL})` : 'unset (buckets in the server process)'}`,
  );
  console.log(`machine: ${servers.storeLine}, LOG_LEVEL=warn`);
  console.log('');

  // With REDIS_URL: the servers' count of calls to Redis over the measured rounds.
  const redisCalls = async () => {
    let calls = 0;
    for (const origin of servers.origins) {
      const text = await (await fetch(`${origin}/metrics`)).text();
      calls += Number(/^punctual_rate_limit_redis_calls_total (\d+)/m.exec(text)?.[1] ?? 0);
    }
    return calls;
  };
  await paced(teams, body, rate, warmup, 0);
  const callsBefore = await redisCalls();
  const roundResults: Round[] = [];
  for (let round = 1; round <= rounds; round++) {
    const stop = servers.meter();
    const result = await paced(teams, body, rate, seconds, round);
    roundResults.push({ round, ...result, cpu: stop() });
  }
  const calls = (await redisCalls()) - callsBefore;
  for (const team of teams) await Promise.all(team.pools.map((pool) => pool.close()));

  console.log(
    `${'team'.padEnd(12)}${pad('round', 6)}${pad('sent', 7)}${pad('req/s', 8)}${pad('p50 ms', 8)}${pad('p90 ms', 8)}${pad('p99 ms', 8)}` +
      `${pad('max ms', 8)}${pad('429', 5)}${pad('fail', 5)}`,
  );
  for (const r of roundResults) {
    for (const s of r.teams) {
      console.log(
        `${s.plan.padEnd(12)}${pad(s.round, 6)}${pad(s.sent, 7)}${pad((s.ok / s.seconds).toFixed(1), 8)}${pad(f2(percentile(s.latencies, 0.5)), 8)}` +
          `${pad(f2(percentile(s.latencies, 0.9)), 8)}${pad(f2(percentile(s.latencies, 0.99)), 8)}${pad(f2(s.latencies[s.latencies.length - 1] ?? NaN), 8)}` +
          `${pad(s.limited, 5)}${pad(s.failed, 5)}`,
      );
    }
    const us = (name: string) => (((r.cpu.cpus[name] ?? 0) * r.cpu.seconds * 1e6) / r.sent).toFixed(0);
    console.log(
      `round ${r.round}, all teams: send lag p99 ${f2(r.lagP99)} / max ${f2(r.lagMax)} ms; server ${us('server')} µs/req` +
        `${r.cpu.cpus.redis === undefined ? '' : `, redis-server ${us('redis')} µs/req`}; others ${(r.cpu.cpus.others ?? 0).toFixed(2)} CPUs`,
    );
  }
  for (const r of roundResults) console.log(cpuLine(`round ${r.round}`, r.cpu));
  console.log('');

  const [unlimited, limited, twin] = [summary('unlimited', roundResults), summary('scale', roundResults), summary('unlimited-2', roundResults)];
  for (const s of [unlimited, limited, twin]) {
    console.log(
      `${s.plan.padEnd(12)} all rounds: ${s.rate.toFixed(1)} req/s answered 201 (${s.ok}), p50 ${f2(s.p50)} / p90 ${f2(s.p90)} / p99 ${f2(s.p99)} / ` +
        `max ${f2(s.max)} ms, ${s.limited} × 429, ${s.failed} failed`,
    );
  }
  const cpuPerRequest = (name: string) =>
    (roundResults.reduce((n, r) => n + (r.cpu.cpus[name] ?? 0) * r.cpu.seconds, 0) * 1e6) / roundResults.reduce((n, r) => n + r.sent, 0);
  console.log(
    `all teams: server CPU ${cpuPerRequest('server').toFixed(0)} µs/req` +
      `${process.env.REDIS_URL ? `, redis-server ${cpuPerRequest('redis').toFixed(0)} µs/req` : ''}; others ≤ ${Math.max(...roundResults.map((r) => r.cpu.cpus.others ?? 0)).toFixed(2)} CPUs`,
  );
  if (process.env.REDIS_URL) {
    console.log(`calls to Redis (punctual_rate_limit_redis_calls_total): ${calls}, ${(calls / limited.ok).toFixed(3)} per request of the scale team`);
  }
  const diffs = (a: ReturnType<typeof summary>, b: ReturnType<typeof summary>) => ({
    rate: pct(a.rate, b.rate),
    p50: pct(a.p50, b.p50),
    p99: pct(a.p99, b.p99),
  });
  const line = (d: ReturnType<typeof diffs>) => `req/s ${signed(d.rate)}, p50 ${signed(d.p50)}, p99 ${signed(d.p99)}`;
  const goal = diffs(limited, unlimited);
  const met =
    [goal.rate, goal.p50, goal.p99].every((d) => Math.abs(d) <= GOAL_PCT) &&
    limited.limited === 0 &&
    [unlimited, limited, twin].every((s) => s.failed === 0);
  console.log(`scale vs unlimited: ${line(goal)} (goal: req/s, p50 and p99 each within ${GOAL_PCT}%, no 429: ${met ? 'met' : 'NOT met'})`);
  console.log(`unlimited-2 vs unlimited (the same plan twice: the noise floor): ${line(diffs(twin, unlimited))}`);
  return met ? 0 : 1;
}
