import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../src/services/project-settings.js';
import type { NewSchedule } from '../../src/store/schedule-store.js';
import type { AttemptNext, ClaimedJob, JobCreateParams, JobListParams, NewJob, ProjectRow, Store } from '../../src/store/store.js';
import { claimLimit, claimRule, leaseMs } from '../../src/delivery/capacity.js';

const DAY_MS = 86_400_000;

/** A fresh, empty database for one test, and what the contract needs to look into it. */
export interface ContractDatabase {
  /** A new store on this database, not migrated yet: each call is another instance, as another process would be. */
  openStore(): Store;
  /** The rows of its schema_migrations table, read directly, by version. */
  migrationRows(): Promise<{ version: number; name: string }[]>;
  /** The numbers of the migration files this store ships. */
  migrationVersions: number[];
  /** Removes the database; the stores opened on it are closed by then. */
  drop(): Promise<void>;
}

/**
 * The behaviour every store must have, whatever its engine. A store's test file calls
 * describeStoreContract with a factory for a fresh database; a behaviour change starts here.
 */
export function describeStoreContract(name: string, makeDatabase: () => Promise<ContractDatabase>, enabled = true): void {
  describe.runIf(enabled)(`store contract: ${name}`, () => {
    let database: ContractDatabase;
    let store: Store;
    let seq = 0;
    const T0 = Date.parse('2027-03-10T12:00:00.000Z');

    beforeEach(async () => {
      database = await makeDatabase();
      store = database.openStore();
      await store.migrate();
    });
    afterEach(async () => {
      await store.close();
      await database.drop();
    });

    async function makeProject(teamPlan = 'unlimited'): Promise<ProjectRow> {
      seq += 1;
      const teamId = `team_c${seq}`;
      await store.teamInsert({ id: teamId, name: 'T', plan: teamPlan, createdAt: T0 });
      const project: ProjectRow = {
        id: `prj_c${seq}`,
        teamId,
        name: 'P',
        webhookUrl: 'http://127.0.0.1:1/x',
        ...PROJECT_DEFAULTS,
        createdAt: T0,
      };
      await store.projectInsert({ project, secret: { id: `whs_c${seq}`, projectId: project.id, ciphertext: 'sealed-1', createdAt: T0, expiresAt: null } });
      return project;
    }

    const job = (id: string, overrides: Partial<NewJob> = {}): NewJob => ({ id, payload: '{"a":1}', scheduledFor: null, runAt: T0, maxRetries: 3, ...overrides });

    function create(project: ProjectRow, jobs: NewJob[], extra: Partial<JobCreateParams> = {}) {
      return store.jobCreate({
        projectId: project.id,
        teamId: project.teamId,
        now: T0,
        jobs,
        quota: null,
        idempotency: null,
        answer: { kind: 'single', statusCode: 201, body: '{}' },
        ...extra,
      });
    }

    it('migrates twice without harm', async () => {
      await store.migrate();
      await store.ping();
    });

    it('migrates a fresh database from three instances at once, applying each migration once', async () => {
      const fresh = await makeDatabase();
      const instances = [fresh.openStore(), fresh.openStore(), fresh.openStore()];
      try {
        // As instances started together do: whoever comes second must find the work done, not redo it or fail.
        await Promise.all(instances.map((instance) => instance.migrate()));
        const rows = await fresh.migrationRows();
        expect(rows.map((row) => row.version)).toEqual(fresh.migrationVersions);
        expect(rows.every((row) => row.name.startsWith(String(row.version).padStart(4, '0')))).toBe(true);
        for (const [i, instance] of instances.entries()) {
          await instance.ping();
          await instance.teamInsert({ id: `team_m${i}`, name: 'T', plan: 'unlimited', createdAt: T0 });
        }
        expect(await instances[0]!.teamCount()).toBe(3);
      } finally {
        for (const instance of instances) await instance.close();
        await fresh.drop();
      }
    });

    it('keeps the first value of a setting', async () => {
      expect(await store.settingGet('k')).toBeNull();
      expect(await store.settingInsertIfAbsent('k', 'one')).toBe('one');
      expect(await store.settingInsertIfAbsent('k', 'two')).toBe('one');
      expect(await store.settingGet('k')).toBe('one');
    });

    it('round-trips teams and projects, and patches projects partially', async () => {
      const project = await makeProject('pro');
      expect(await store.teamGet(project.teamId)).toEqual({ id: project.teamId, name: 'T', plan: 'pro', createdAt: T0 });
      expect(await store.teamUpdate({ teamId: project.teamId, plan: 'free' })).toMatchObject({ name: 'T', plan: 'free' });
      expect(await store.teamUpdate({ teamId: 'team_none', plan: 'free' })).toBeNull();
      expect(await store.projectGet(project.id)).toEqual(project);
      const [a, b] = await Promise.all([
        store.projectUpdate({ projectId: project.id, patch: { deliveryConcurrency: 5 } }),
        store.projectUpdate({ projectId: project.id, patch: { acceptAny2xx: true } }),
      ]);
      expect(a!.deliveryConcurrency).toBe(5);
      expect(b).toMatchObject({ deliveryConcurrency: 5, acceptAny2xx: true });
      expect(await store.projectGet(project.id)).toMatchObject({ deliveryConcurrency: 5, acceptAny2xx: true });
      expect(await store.projectListByTeam(project.teamId)).toHaveLength(1);
      expect(await store.teamCount()).toBeGreaterThan(0);
    });

    it('finds an API key by hash with its project and team; revokes once', async () => {
      const project = await makeProject();
      const hash = Buffer.alloc(32, 7);
      await store.apiKeyInsert({ id: 'key_c1', projectId: project.id, name: 'k', prefix: 'pk_abc', createdAt: T0, lastUsedAt: null, revokedAt: null, hash });
      const principal = await store.apiKeyFindByHash(hash);
      expect(principal!.key).toMatchObject({ id: 'key_c1', revokedAt: null });
      expect(principal!.key.hash.equals(hash)).toBe(true);
      expect(principal!.project).toEqual(project);
      expect(principal!.team.id).toBe(project.teamId);
      expect(await store.apiKeyFindByHash(Buffer.alloc(32, 8))).toBeNull();
      await store.apiKeyTouch({ keyId: 'key_c1', now: T0 + 5 });
      expect((await store.apiKeyGet('key_c1'))!.lastUsedAt).toBe(T0 + 5);
      expect((await store.apiKeyRevoke({ keyId: 'key_c1', now: T0 + 10 }))!.revokedAt).toBe(T0 + 10);
      expect((await store.apiKeyRevoke({ keyId: 'key_c1', now: T0 + 20 }))!.revokedAt).toBe(T0 + 10);
      expect(await store.apiKeyRevoke({ keyId: 'key_none', now: T0 })).toBeNull();
    });

    it('rotates webhook secrets keeping at most two active', async () => {
      const project = await makeProject();
      const rotate = (n: number, now: number) =>
        store.webhookSecretRotate({ projectId: project.id, secret: { id: `whs_r${n}_${project.id}`, projectId: project.id, ciphertext: `sealed-${n}`, createdAt: now, expiresAt: null }, overlapMs: 1000, now });
      await rotate(2, T0 + 1);
      expect((await store.webhookSecretListActive({ projectId: project.id, now: T0 + 1 })).map((s) => [s.ciphertext, s.expiresAt])).toEqual([
        ['sealed-2', null],
        ['sealed-1', T0 + 1001],
      ]);
      await rotate(3, T0 + 2);
      expect((await store.webhookSecretListActive({ projectId: project.id, now: T0 + 2 })).map((s) => s.ciphertext)).toEqual(['sealed-3', 'sealed-2']);
      expect((await store.webhookSecretListActive({ projectId: project.id, now: T0 + 1002 })).map((s) => s.ciphertext)).toEqual(['sealed-3']);
    });

    it('creates jobs QUEUED and lists them newest first by cursor', async () => {
      const project = await makeProject();
      const result = await create(project, [job('job_c_a'), job('job_c_b', { scheduledFor: T0 + 5000, runAt: T0 + 5000 }), job('job_c_c')]);
      expect(result).toMatchObject({ kind: 'created', created: [true, true, true] });
      const b = await store.jobGet({ projectId: project.id, jobId: 'job_c_b' });
      expect(b).toMatchObject({ status: 'QUEUED', payload: '{"a":1}', scheduledFor: T0 + 5000, runAt: T0 + 5000, queuedAt: T0, attemptCount: 0, createdAt: T0, updatedAt: T0, cancelledAt: null });
      const page1 = await store.jobList({ projectId: project.id, status: null, beforeSeq: null, limit: 2 });
      expect(page1.map((j) => j.id)).toEqual(['job_c_c', 'job_c_b']);
      const page2 = await store.jobList({ projectId: project.id, status: null, beforeSeq: page1[1]!.seq, limit: 2 });
      expect(page2.map((j) => j.id)).toEqual(['job_c_a']);
      expect(await store.jobGet({ projectId: 'prj_other', jobId: 'job_c_a' })).toBeNull();
    });

    it('enforces the quota in request order and counts usage per day', async () => {
      const project = await makeProject();
      const quota = { limit: 2, monthStartDay: '2027-03-01', monthEndDay: '2027-04-01' };
      const first = await create(project, [job('job_q1')], { quota });
      expect(first).toMatchObject({ created: [true], usedBefore: 0 });
      const second = await create(project, [job('job_q2'), job('job_q3')], { quota });
      expect(second).toMatchObject({ created: [true, false], usedBefore: 1 });
      expect(await store.jobGet({ projectId: project.id, jobId: 'job_q3' })).toBeNull();
      expect(await store.usageDaily({ teamId: project.teamId, fromDay: '2027-03-01', toDay: '2027-04-01' })).toEqual([{ day: '2027-03-10', jobsCreated: 2 }]);
    });

    it("counts a day's jobs created by many separate writes as one figure, and the quota sees them all", async () => {
      const project = await makeProject();
      // Each awaited creation is a group of its own (on PostgreSQL, a statement adding to a shard
      // of the day's usage picked at random): the day still reads as one total.
      for (let i = 0; i < 24; i++) await create(project, [job(`job_u${i}`)]);
      expect(await store.usageDaily({ teamId: project.teamId, fromDay: '2027-03-01', toDay: '2027-04-01' })).toEqual([{ day: '2027-03-10', jobsCreated: 24 }]);
      const quota = { limit: 25, monthStartDay: '2027-03-01', monthEndDay: '2027-04-01' };
      expect(await create(project, [job('job_u24'), job('job_u25')], { quota })).toMatchObject({ created: [true, false], usedBefore: 24 });
    });

    it('replays and conflicts on idempotency keys within the window only', async () => {
      const project = await makeProject();
      const idem = (hash: string, validAfter = T0 - 1000) => ({ endpoint: 'dispatch', key: 'k1', requestHash: hash, validAfter });
      const first = await create(project, [job('job_i1')], { idempotency: idem('h1'), answer: { kind: 'single', statusCode: 201, body: 'first' } });
      expect(first.kind).toBe('created');
      expect(await create(project, [job('job_i2')], { idempotency: idem('h1') })).toEqual({ kind: 'replayed', response: { statusCode: 201, body: 'first' } });
      expect(await create(project, [job('job_i3')], { idempotency: idem('h2') })).toEqual({ kind: 'idempotency_conflict' });
      expect(await store.jobGet({ projectId: project.id, jobId: 'job_i2' })).toBeNull();
      const expired = await create(project, [job('job_i4')], { idempotency: idem('h2', T0 + 1), answer: { kind: 'single', statusCode: 201, body: 'fresh' } });
      expect(expired.kind).toBe('created');
      expect(await create(project, [job('job_i5')], { idempotency: idem('h2') })).toEqual({ kind: 'replayed', response: { statusCode: 201, body: 'fresh' } });
    });

    it('stores no idempotency key when the answer is an error', async () => {
      const project = await makeProject();
      const idem = { endpoint: 'dispatch', key: 'k2', requestHash: 'h', validAfter: 0 };
      await create(project, [job('job_e1')], { idempotency: idem, quota: { limit: 0, monthStartDay: '2027-03-01', monthEndDay: '2027-04-01' } });
      const retried = await create(project, [job('job_e2')], { idempotency: idem });
      expect(retried.kind).toBe('created');
    });

    it('creates one job for concurrent creations with one idempotency key', async () => {
      const project = await makeProject();
      const idem = { endpoint: 'dispatch', key: 'k3', requestHash: 'h', validAfter: 0 };
      const results = await Promise.all(Array.from({ length: 8 }, (_, i) => create(project, [job(`job_cc${i}`)], { idempotency: idem })));
      expect(results.filter((r) => r.kind === 'created')).toHaveLength(1);
      expect(results.filter((r) => r.kind === 'replayed')).toHaveLength(7);
    });

    it('cancels only QUEUED jobs, and says why not otherwise', async () => {
      const project = await makeProject();
      await create(project, [job('job_x1')]);
      const ok = await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_x1', now: T0 + 1 });
      expect(ok).toMatchObject({ ok: true, job: { status: 'CANCELLED', cancelledAt: T0 + 1, updatedAt: T0 + 1 } });
      expect(await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_x1', now: T0 + 2 })).toEqual({ ok: false, status: 'CANCELLED' });
      expect(await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_none', now: T0 })).toEqual({ ok: false, status: null });
      expect(await store.jobCancelIfQueued({ projectId: 'prj_other', jobId: 'job_x1', now: T0 })).toEqual({ ok: false, status: null });
      expect(await store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_x1', scheduledFor: null, now: T0 })).toEqual({ ok: false, status: 'CANCELLED' });
      expect(await store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_x1', now: T0 })).toEqual({ ok: false, status: 'CANCELLED' });
    });

    it('reschedules to the later of the asked time and when the job entered QUEUED', async () => {
      const project = await makeProject();
      await create(project, [job('job_r1', { scheduledFor: T0 + 10_000, runAt: T0 + 10_000 })]);
      const later = await store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_r1', scheduledFor: T0 + 20_000, now: T0 + 1 });
      expect(later).toMatchObject({ ok: true, job: { scheduledFor: T0 + 20_000, runAt: T0 + 20_000, updatedAt: T0 + 1 } });
      const past = await store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_r1', scheduledFor: T0 - 99_000, now: T0 + 2 });
      expect(past).toMatchObject({ ok: true, job: { scheduledFor: T0 - 99_000, runAt: T0 } });
      const atOnce = await store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_r1', scheduledFor: null, now: T0 + 3 });
      expect(atOnce).toMatchObject({ ok: true, job: { scheduledFor: null, runAt: T0 } });
    });

    describe('delivery', () => {
      const success = { outcome: 'success' as const, statusCode: 200, durationMs: 5, error: null, responseBody: 'ok' };
      const failure = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };
      const claim = (now: number, limit = 10, workerId = 'wrk_a', dueBy = now, excludeProjectIds: string[] = []) =>
        store.jobClaimDue({ now, dueBy, limit, workerId, leaseExtraMs: 30_000, excludeProjectIds, heldByProject: {}, claimRule: claimRule(256) });

      it("claims no more of a project's jobs than its room: its claim limit less what the worker holds", async () => {
        const narrow = await makeProject();
        // Claimed up to twice its concurrency: 2.
        await store.projectUpdate({ projectId: narrow.id, patch: { deliveryConcurrency: 1 } });
        const rated = await makeProject();
        // 25 a second: a tenth of a second's worth, rounded up, is 3, below twice its concurrency of 100.
        await store.projectUpdate({ projectId: rated.id, patch: { deliveryRatePerSecond: 25 } });
        const wide = await makeProject();
        await create(narrow, [1, 2, 3, 4, 5].map((i) => job(`job_n${i}`, { runAt: T0 + i })));
        await create(rated, [1, 2, 3, 4, 5].map((i) => job(`job_r${i}`, { runAt: T0 + i })));
        await create(wide, [6, 7].map((i) => job(`job_w${i}`, { runAt: T0 + i })));
        const ids = (claimed: ClaimedJob[]) => claimed.map((j) => j.id);
        const first = await store.jobClaimDue({ now: T0 + 10, dueBy: T0 + 10, limit: 100, workerId: 'wrk_a', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: { [narrow.id]: 1 }, claimRule: claimRule(256) });
        // Earliest due first within each project; the rest stay QUEUED.
        expect(ids(first).sort()).toEqual(['job_n1', 'job_r1', 'job_r2', 'job_r3', 'job_w6', 'job_w7']);
        const second = await store.jobClaimDue({
          now: T0 + 10,
          dueBy: T0 + 10,
          limit: 100,
          workerId: 'wrk_a',
          leaseExtraMs: 30_000,
          excludeProjectIds: [],
          heldByProject: { [narrow.id]: 1, [rated.id]: 1 },
          claimRule: claimRule(256),
        });
        expect(ids(second).sort()).toEqual(['job_n2', 'job_r4', 'job_r5']);
        expect((await store.jobGet({ projectId: narrow.id, jobId: 'job_n3' }))?.status).toBe('QUEUED');
      });

      it("claims of each project exactly the capacity model's claimLimit, less what the worker holds (one rule, in TypeScript and in SQL)", async () => {
        // A small instance (20 slots, a share of 10) so that every branch of the rule is taken.
        const globalSlots = 20;
        const settings = [
          { deliveryConcurrency: 1, deliveryRatePerSecond: null },
          { deliveryConcurrency: 3, deliveryRatePerSecond: null },
          { deliveryConcurrency: 100, deliveryRatePerSecond: null },
          { deliveryConcurrency: 50, deliveryRatePerSecond: 0.5 },
          { deliveryConcurrency: 50, deliveryRatePerSecond: 25 },
          { deliveryConcurrency: 2, deliveryRatePerSecond: 35 },
        ];
        const projects = [];
        for (const [i, patch] of settings.entries()) {
          const project = await makeProject();
          await store.projectUpdate({ projectId: project.id, patch });
          await create(project, Array.from({ length: 15 }, (_, n) => job(`job_cap${i}_${n}`, { runAt: T0 + n })));
          projects.push({ project: { ...project, ...patch }, held: i % 2 });
        }
        const heldByProject = Object.fromEntries(projects.filter((p) => p.held > 0).map((p) => [p.project.id, p.held]));
        const claimed = await store.jobClaimDue({ now: T0 + 20, dueBy: T0 + 20, limit: 1_000, workerId: 'wrk_cap', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject, claimRule: claimRule(globalSlots) });
        const counts = projects.map(({ project }) => claimed.filter((j) => j.projectId === project.id).length);
        expect(counts).toEqual(projects.map(({ project, held }) => claimLimit(project, globalSlots) - held));
        expect(counts).toEqual([2, 5, 10, 0, 3, 3]);
        // The lease is leaseMs of the project (its timeout plus the margin), from the claim's now.
        for (const j of claimed) expect(j.leaseExpiresAt).toBe(T0 + 20 + leaseMs({ deliveryTimeoutMs: 30_000 }));
      });

      it('claims the first startable due jobs of each project with their attempt STARTED, the rest DISPATCHED', async () => {
        const a = await makeProject();
        const b = await makeProject();
        const c = await makeProject();
        await create(a, [1, 2, 3].map((i) => job(`job_sa${i}`, { runAt: T0 + i })));
        await create(b, [job('job_sb1', { runAt: T0 + 1 }), job('job_sb2', { runAt: T0 + 25 })]);
        await create(c, [job('job_sc1', { runAt: T0 + 1 })]);
        const claimed = await store.jobClaimDue({
          now: T0 + 10,
          dueBy: T0 + 35,
          limit: 100,
          workerId: 'wrk_s',
          leaseExtraMs: 30_000,
          excludeProjectIds: [],
          heldByProject: {},
          claimRule: claimRule(256),
          // Two of a, one of b (its second is not due yet: claimed ahead, DISPATCHED), none of c.
          startable: { byProject: { [a.id]: 2, [b.id]: 5 }, attemptPrefix: 'att_claimX' },
        });
        const started = claimed.filter((j) => j.started).map((j) => j.id);
        // A store may ignore startable; one that honours it starts exactly these.
        expect([[], ['job_sa1', 'job_sa2', 'job_sb1']]).toContainEqual(started.sort());
        expect(claimed.map((j) => j.id).sort()).toEqual(['job_sa1', 'job_sa2', 'job_sa3', 'job_sb1', 'job_sb2', 'job_sc1']);
        for (const j of claimed.filter((x) => x.started)) {
          expect(j).toMatchObject({ status: 'STARTED', attemptCount: 1, started: { attemptNumber: 1, startedAt: T0 + 10 } });
          expect(j.started!.attemptId).toBe(`att_claimX${j.seq}`);
          expect(await store.attemptListByJob(j.id)).toEqual([expect.objectContaining({ id: j.started!.attemptId, attemptNumber: 1, startedAt: T0 + 10 })]);
          expect(await store.attemptFinish({ jobId: j.id, attemptId: j.started!.attemptId, workerId: 'wrk_s', now: T0 + 20, result: success, next: { kind: 'complete' } })).toBe(true);
        }
        for (const j of claimed.filter((x) => !x.started)) expect((await store.jobGet({ projectId: j.projectId, jobId: j.id }))?.status).toBe('DISPATCHED');
      });

      it('claims due jobs earliest first, up to the limit, and never future ones', async () => {
        const project = await makeProject();
        await create(project, [
          job('job_d3', { runAt: T0 + 3 }),
          job('job_d1', { runAt: T0 + 1 }),
          job('job_future', { runAt: T0 + 86_400_000 * 30 }),
          job('job_d2', { runAt: T0 + 2 }),
        ]);
        expect(await store.jobNextDueAt({ after: 0 })).toBe(T0 + 1);
        expect(await store.jobNextDueAt({ after: T0 + 1 })).toBe(T0 + 2);
        const first = await claim(T0 + 10, 2);
        expect(first.map((j) => j.id)).toEqual(['job_d1', 'job_d2']);
        expect(first[0]).toMatchObject({ status: 'DISPATCHED', leaseExpiresAt: T0 + 10 + 30_000 + 30_000, updatedAt: T0 + 10 });
        expect((await claim(T0 + 10)).map((j) => j.id)).toEqual(['job_d3']);
        expect(await claim(T0 + 10)).toEqual([]);
        expect(await store.jobNextDueAt({ after: 0 })).toBe(T0 + 86_400_000 * 30);
        expect(await store.jobNextDueAt({ after: T0 + 86_400_000 * 30 })).toBeNull();
        // Every status is counted, those no job is in as 0.
        expect(await store.jobCountByStatus()).toEqual({ QUEUED: 1, DISPATCHED: 3, STARTED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 });
      });

      it('skips the projects it is told to', async () => {
        const busy = await makeProject();
        const idle = await makeProject();
        await create(busy, [job('job_busy', { runAt: T0 })]);
        await create(idle, [job('job_idle', { runAt: T0 + 1 })]);
        expect((await claim(T0 + 5, 10, 'wrk_a', T0 + 5, [busy.id])).map((j) => j.id)).toEqual(['job_idle']);
        expect((await claim(T0 + 5)).map((j) => j.id)).toEqual(['job_busy']);
      });

      it('steps over a paused project\'s due jobs, and claims them earliest first once it resumes', async () => {
        const paused = await makeProject();
        const running = await makeProject();
        await create(paused, [job('job_p2', { runAt: T0 + 2 }), job('job_p1', { runAt: T0 + 1 })]);
        await create(running, [job('job_r', { runAt: T0 + 3 })]);
        expect(await store.projectUpdate({ projectId: paused.id, patch: { paused: true } })).toMatchObject({ paused: true });
        expect((await claim(T0 + 5)).map((j) => j.id)).toEqual(['job_r']);
        expect(await claim(T0 + 5)).toEqual([]);
        expect(await store.jobGet({ projectId: paused.id, jobId: 'job_p1' })).toMatchObject({ status: 'QUEUED' });
        await store.projectUpdate({ projectId: paused.id, patch: { paused: false } });
        expect((await claim(T0 + 6)).map((j) => j.id)).toEqual(['job_p1', 'job_p2']);
      });

      it("holds a paused project's jobs in batches and releases them earliest due first; jobs queued while paused are held at once", async () => {
        const project = await makeProject();
        await create(project, Array.from({ length: 25 }, (_, i) => job(`job_h${String(i).padStart(2, '0')}`, { runAt: T0 + 100 - i })));
        await store.projectUpdate({ projectId: project.id, patch: { paused: true } });
        const cursors: (number | null)[] = [];
        for (let afterSeq: number | null = 0; afterSeq !== null; ) {
          afterSeq = (await store.jobHoldBatch({ projectId: project.id, afterSeq, limit: 10 })).nextAfterSeq;
          cursors.push(afterSeq);
        }
        expect(cursors).toHaveLength(3);
        // Created while paused (and retried, requeued…): held from the start.
        await create(project, [job('job_new', { runAt: T0 })]);
        expect(await store.jobNextDueAt({ after: 0 })).toBeNull();
        // Resumed (the flag alone): still held until released, and listed as such.
        await store.projectUpdate({ projectId: project.id, patch: { paused: false } });
        expect(await store.projectListWithHeldJobs()).toEqual([project.id]);
        expect(await claim(T0 + 200)).toEqual([]);
        expect(await store.jobReleaseHeldBatch({ projectId: project.id, limit: 5 })).toBe(5);
        // Earliest due first: job_new (T0), then job_h24 (T0 + 76) …
        expect((await claim(T0 + 200, 100)).map((j) => j.id)).toEqual(['job_new', 'job_h24', 'job_h23', 'job_h22', 'job_h21']);
        expect(await store.jobReleaseHeldBatch({ projectId: project.id, limit: 100 })).toBe(21);
        expect(await store.projectListWithHeldJobs()).toEqual([]);
        expect(await claim(T0 + 200, 100)).toHaveLength(21);
        // Paused again, a release changes nothing.
        await create(project, [job('job_late', { runAt: T0 })]);
        await store.projectUpdate({ projectId: project.id, patch: { paused: true } });
        await store.jobHoldBatch({ projectId: project.id, afterSeq: 0, limit: 10 });
        expect(await store.jobReleaseHeldBatch({ projectId: project.id, limit: 10 })).toBe(0);
      });

      it('a job claimed before its project was paused is not started but QUEUED again as it was; a started one is answered as before', async () => {
        const project = await makeProject();
        await create(project, [job('job_held', { runAt: T0 + 1 }), job('job_sent', { runAt: T0 })]);
        await claim(T0 + 5);
        expect(await store.attemptStart({ jobId: 'job_sent', attemptId: 'att_sent', workerId: 'wrk_a', now: T0 + 5, leaseExpiresAt: T0 + 1000 })).toEqual({
          attemptNumber: 1,
        });
        await store.projectUpdate({ projectId: project.id, patch: { paused: true } });
        expect(await store.attemptStart({ jobId: 'job_held', attemptId: 'att_held', workerId: 'wrk_a', now: T0 + 6, leaseExpiresAt: T0 + 1000 })).toBeNull();
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_held' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 1, attemptCount: 0 });
        expect(await store.attemptListByJob('job_held')).toEqual([]);
        // The attempt that had started (its request may be out) keeps its answer and its lease.
        expect(await store.attemptStart({ jobId: 'job_sent', attemptId: 'att_sent', workerId: 'wrk_a', now: T0 + 6, leaseExpiresAt: T0 + 1000 })).toEqual({
          attemptNumber: 1,
        });
        expect(await store.attemptFinish({ jobId: 'job_sent', attemptId: 'att_sent', workerId: 'wrk_a', now: T0 + 7, result: success, next: { kind: 'complete' } })).toBe(true);
        expect(await store.jobListDispatchedTo({ workerId: 'wrk_a' })).toEqual([]);
        await store.projectUpdate({ projectId: project.id, patch: { paused: false } });
        expect(await store.jobReleaseHeldBatch({ projectId: project.id, limit: 10 })).toBe(1);
        expect((await claim(T0 + 8)).map((j) => j.id)).toEqual(['job_held']);
      });

      it("steps over a backed-off project's jobs until its Retry-After ends, and gives back one claimed before it", async () => {
        const project = await makeProject();
        const other = await makeProject();
        await create(project, [job('job_b1', { runAt: T0 }), job('job_b2', { runAt: T0 + 1 })]);
        await create(other, [job('job_o', { runAt: T0 + 2 })]);
        expect((await claim(T0 + 5, 1)).map((j) => j.id)).toEqual(['job_b1']);
        await store.projectBackoff({ projectId: project.id, until: T0 + 2_000, now: T0 + 5 });
        // A shorter hold recorded later does not shorten it.
        await store.projectBackoff({ projectId: project.id, until: T0 + 1_000, now: T0 + 6 });
        expect((await claim(T0 + 10)).map((j) => j.id)).toEqual(['job_o']);
        expect(await store.attemptStart({ jobId: 'job_b1', attemptId: 'att_b1', workerId: 'wrk_a', now: T0 + 10, leaseExpiresAt: T0 + 60_000 })).toBeNull();
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_b1' })).toMatchObject({ status: 'QUEUED', runAt: T0, attemptCount: 0 });
        expect(await claim(T0 + 1_999)).toEqual([]);
        expect((await claim(T0 + 2_000)).map((j) => j.id)).toEqual(['job_b1', 'job_b2']);
      });

      it('lists the jobs claimed by a worker and not yet started', async () => {
        const project = await makeProject();
        await create(project, [job('job_mine1'), job('job_mine2'), job('job_theirs')]);
        await claim(T0, 2, 'wrk_me');
        await claim(T0, 1, 'wrk_them');
        await store.attemptStart({ jobId: 'job_mine2', attemptId: 'att_mine2', workerId: 'wrk_me', now: T0, leaseExpiresAt: T0 + 1000 });
        const mine = await store.jobListDispatchedTo({ workerId: 'wrk_me' });
        expect(mine.map((j) => [j.id, j.status])).toEqual([['job_mine1', 'DISPATCHED']]);
        expect(mine[0]!.leaseExpiresAt).toBe(T0 + 30_000 + 30_000);
      });

      it('a start asked again for the same attempt answers that attempt and counts it once; another attempt id is refused', async () => {
        const project = await makeProject();
        await create(project, [job('job_again')]);
        await claim(T0);
        const start = (attemptId: string) => store.attemptStart({ jobId: 'job_again', attemptId, workerId: 'wrk_a', now: T0 + 1, leaseExpiresAt: T0 + 1000 });
        expect(await start('att_again1')).toEqual({ attemptNumber: 1 });
        expect(await start('att_again1')).toEqual({ attemptNumber: 1 });
        expect(await start('att_other')).toBeNull();
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_again' })).toMatchObject({ status: 'STARTED', attemptCount: 1 });
        expect((await store.attemptListByJob('job_again')).map((a) => a.id)).toEqual(['att_again1']);
      });

      it('a released attempt queues the job at once without spending its retry budget', async () => {
        const project = await makeProject();
        await create(project, [job('job_rel', { maxRetries: 0 })]);
        await claim(T0);
        await store.attemptStart({ jobId: 'job_rel', attemptId: 'att_rel1', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 1000 });
        const aborted = { outcome: 'network_error' as const, statusCode: null, durationMs: 9, error: 'aborted', responseBody: null };
        expect(await store.attemptFinish({ jobId: 'job_rel', attemptId: 'att_rel1', workerId: 'wrk_a', now: T0 + 9, result: aborted, next: { kind: 'release' } })).toBe(true);
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_rel' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 9, attemptCount: 1 });
        await claim(T0 + 9);
        expect(await store.attemptStart({ jobId: 'job_rel', attemptId: 'att_rel2', workerId: 'wrk_a', now: T0 + 9, leaseExpiresAt: T0 + 1000 })).toEqual({ attemptNumber: 1 });
      });

      it('claims ahead up to dueBy, leasing from now', async () => {
        const project = await makeProject();
        await create(project, [job('job_a1', { runAt: T0 + 20 }), job('job_a2', { runAt: T0 + 30 })]);
        const claimed = await claim(T0, 10, 'wrk_a', T0 + 25);
        expect(claimed.map((j) => [j.id, j.runAt, j.leaseExpiresAt])).toEqual([['job_a1', T0 + 20, T0 + 60_000]]);
      });

      it('a claimed job can no longer be cancelled or rescheduled; a cancelled one is never claimed', async () => {
        const project = await makeProject();
        await create(project, [job('job_k1'), job('job_k2')]);
        expect((await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_k2', now: T0 })).ok).toBe(true);
        expect((await claim(T0)).map((j) => j.id)).toEqual(['job_k1']);
        expect(await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_k1', now: T0 })).toEqual({ ok: false, status: 'DISPATCHED' });
        expect(await store.jobRescheduleIfQueued({ projectId: project.id, jobId: 'job_k1', scheduledFor: null, now: T0 })).toEqual({ ok: false, status: 'DISPATCHED' });
      });

      it('starts and completes an attempt for the lease holder only', async () => {
        const project = await makeProject();
        await create(project, [job('job_s1')]);
        await claim(T0);
        expect(await store.attemptStart({ jobId: 'job_s1', attemptId: 'att_x', workerId: 'wrk_b', now: T0, leaseExpiresAt: T0 + 1000 })).toBeNull();
        expect(await store.attemptStart({ jobId: 'job_s1', attemptId: 'att_1', workerId: 'wrk_a', now: T0 + 1, leaseExpiresAt: T0 + 1000 })).toEqual({ attemptNumber: 1 });
        expect((await store.jobGet({ projectId: project.id, jobId: 'job_s1' }))!).toMatchObject({ status: 'STARTED', attemptCount: 1 });
        expect(await store.attemptListByJob('job_s1')).toEqual([
          { id: 'att_1', jobId: 'job_s1', attemptNumber: 1, startedAt: T0 + 1, finishedAt: null, outcome: null, statusCode: null, durationMs: null, error: null, responseBody: null, acceptedAt: null, reportedAt: null, reportBy: null },
        ]);
        const wrong = await store.attemptFinish({ jobId: 'job_s1', attemptId: 'att_other', workerId: 'wrk_a', now: T0 + 2, result: success, next: { kind: 'complete' } });
        expect(wrong).toBe(false);
        const ok = await store.attemptFinish({ jobId: 'job_s1', attemptId: 'att_1', workerId: 'wrk_a', now: T0 + 3, result: success, next: { kind: 'complete' } });
        expect(ok).toBe(true);
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_s1' })).toMatchObject({ status: 'COMPLETED', completedAt: T0 + 3, lastError: null });
        expect((await store.attemptListByJob('job_s1'))[0]).toMatchObject({ finishedAt: T0 + 3, outcome: 'success', statusCode: 200, durationMs: 5, responseBody: 'ok' });
      });

      it('a failed attempt requeues with its runAt, or fails the job', async () => {
        const project = await makeProject();
        await create(project, [job('job_f1', { maxRetries: 1 })]);
        await claim(T0);
        await store.attemptStart({ jobId: 'job_f1', attemptId: 'att_f1', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 1000 });
        await store.attemptFinish({ jobId: 'job_f1', attemptId: 'att_f1', workerId: 'wrk_a', now: T0 + 5, result: failure, next: { kind: 'retry', runAt: T0 + 500 } });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_f1' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 500, queuedAt: T0 + 5, lastError: 'HTTP 500' });
        expect(await claim(T0 + 499)).toEqual([]);
        await claim(T0 + 500);
        expect(await store.attemptStart({ jobId: 'job_f1', attemptId: 'att_f2', workerId: 'wrk_a', now: T0 + 500, leaseExpiresAt: T0 + 2000 })).toEqual({ attemptNumber: 2 });
        // An outcome without a message is its own lastError.
        const timeout = { outcome: 'timeout' as const, statusCode: null, durationMs: 10, error: null, responseBody: null };
        await store.attemptFinish({ jobId: 'job_f1', attemptId: 'att_f2', workerId: 'wrk_a', now: T0 + 510, result: timeout, next: { kind: 'fail' } });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_f1' })).toMatchObject({ status: 'FAILED', failedAt: T0 + 510, attemptCount: 2, lastError: 'timeout' });
        const retried = await store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_f1', now: T0 + 600 });
        expect(retried).toMatchObject({ ok: true, job: { status: 'QUEUED', runAt: T0 + 600, failedAt: null } });
        await claim(T0 + 600);
        expect(await store.attemptStart({ jobId: 'job_f1', attemptId: 'att_f3', workerId: 'wrk_a', now: T0 + 600, leaseExpiresAt: T0 + 2000 })).toEqual({ attemptNumber: 1 });
      });

      it("keeps a job's trace context through claims and a retry; a job without one reads null", async () => {
        const project = await makeProject();
        const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
        const tracestate = 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7';
        await create(project, [job('job_t1', { traceparent, tracestate, maxRetries: 0 }), job('job_t2', { traceparent, tracestate: null }), job('job_t0')]);
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_t1' })).toMatchObject({ traceparent, tracestate });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_t0' })).toMatchObject({ traceparent: null, tracestate: null });
        const claimed = await claim(T0);
        expect(claimed.map((j) => [j.id, j.traceparent, j.tracestate])).toEqual([
          ['job_t1', traceparent, tracestate],
          ['job_t2', traceparent, null],
          ['job_t0', null, null],
        ]);
        await store.attemptStart({ jobId: 'job_t1', attemptId: 'att_t1', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 1000 });
        await store.attemptFinish({ jobId: 'job_t1', attemptId: 'att_t1', workerId: 'wrk_a', now: T0 + 5, result: failure, next: { kind: 'fail' } });
        expect(await store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_t1', now: T0 + 10 })).toMatchObject({ ok: true, job: { traceparent, tracestate } });
        expect((await claim(T0 + 10)).map((j) => [j.id, j.traceparent, j.tracestate])).toEqual([['job_t1', traceparent, tracestate]]);
        // Created started (a store that starts jobs due at once for the dispatching worker), it carries its context too.
        const immediate = await create(project, [job('job_t3', { traceparent, tracestate })], {
          startDueNow: { workerId: 'wrk_b', leaseExpiresAt: T0 + 60_000, limit: 1 },
        });
        if (immediate.kind === 'created' && immediate.started.length === 0) await claim(T0, 10, 'wrk_b');
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_t3' })).toMatchObject({ traceparent, tracestate });
      });

      it('creates jobs due at once with their first attempt STARTED for the worker, up to the limit, and none for a paused or held-back project', async () => {
        const start = { workerId: 'wrk_s', leaseExpiresAt: T0 + 60_000, limit: 2 };
        const project = await makeProject();
        const result = await create(project, [job('job_s1'), job('job_s2'), job('job_s3'), job('job_s4', { runAt: T0 + 5_000 })], { startDueNow: start });
        if (result.kind !== 'created') throw new Error('not created');
        // A store may ignore startDueNow; one that honours it starts the first due jobs, up to the limit.
        const started = result.started.map((s) => s.jobId);
        expect([[], ['job_s1', 'job_s2']]).toContainEqual(started);
        for (const s of result.started) {
          expect(await store.jobGet({ projectId: project.id, jobId: s.jobId })).toMatchObject({ status: 'STARTED', attemptCount: 1, runAt: T0, createdAt: T0 });
          expect(await store.attemptListByJob(s.jobId)).toEqual([expect.objectContaining({ id: s.attemptId, attemptNumber: 1, startedAt: T0, finishedAt: null })]);
          // Leased to the worker: its outcome is recorded as any started attempt's.
          expect(await store.attemptFinish({ jobId: s.jobId, attemptId: s.attemptId, workerId: 'wrk_s', now: T0 + 5, result: success, next: { kind: 'complete' } })).toBe(true);
        }
        for (const jobId of ['job_s3', 'job_s4']) expect((await store.jobGet({ projectId: project.id, jobId }))?.status).toBe('QUEUED');
        // Paused, or held back by a receiver's Retry-After: created QUEUED, none started.
        const paused = await makeProject();
        await store.projectUpdate({ projectId: paused.id, patch: { paused: true } });
        const backedOff = await makeProject();
        await store.projectBackoff({ projectId: backedOff.id, until: T0 + 1_000, now: T0 });
        for (const [p, id] of [[paused, 'job_sp'], [backedOff, 'job_sb']] as const) {
          const held = await create(p, [job(id)], { startDueNow: start });
          expect(held.kind === 'created' && held.started).toEqual([]);
          expect((await store.jobGet({ projectId: p.id, jobId: id }))?.status).toBe('QUEUED');
        }
      });

      it('rescues expired leases: DISPATCHED back to QUEUED without an attempt, STARTED as lease_expired', async () => {
        const project = await makeProject();
        await create(project, [job('job_l1'), job('job_l2', { maxRetries: 1 }), job('job_l3', { maxRetries: 0 })]);
        await claim(T0); // leases end at T0 + 60 000
        await store.attemptStart({ jobId: 'job_l2', attemptId: 'att_l2', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 60_000 });
        await store.attemptStart({ jobId: 'job_l3', attemptId: 'att_l3', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 60_000 });
        expect(await store.jobRescueExpiredLeases({ now: T0 + 59_999, expiredBefore: T0 + 59_999, limit: 10, retryAt: () => 0 })).toEqual([]);
        const seen: string[] = [];
        const rescued = await store.jobRescueExpiredLeases({
          now: T0 + 60_001,
          expiredBefore: T0 + 60_001,
          limit: 10,
          retryAt: (lease, p) => {
            seen.push(`${lease.job.id}:${lease.attemptNumber}:${p.retryInitialDelayMs}`);
            return lease.attemptNumber! <= lease.job.maxRetries ? T0 + 90_000 : null;
          },
        });
        expect(rescued.map((r) => [r.job.id, r.attemptNumber]).sort()).toEqual([['job_l1', null], ['job_l2', 1], ['job_l3', 1]]);
        expect(seen.sort()).toEqual(['job_l2:1:30000', 'job_l3:1:30000']);
        // Never started: due when it was (a claim given back is not a new due time, SPEC section 2).
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_l1' })).toMatchObject({ status: 'QUEUED', runAt: T0, queuedAt: T0, attemptCount: 0 });
        const lost = 'lease expired: the worker stopped before the attempt finished';
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_l2' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 90_000, attemptCount: 1, lastError: lost });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_l3' })).toMatchObject({ status: 'FAILED', failedAt: T0 + 60_001, lastError: lost });
        // Timed from the attempt's start to the rescue.
        expect((await store.attemptListByJob('job_l2'))[0]).toMatchObject({ outcome: 'lease_expired', finishedAt: T0 + 60_001, durationMs: 60_001, statusCode: null, error: lost });
        // The worker that lost its lease answers late: nothing changes.
        const late = await store.attemptFinish({ jobId: 'job_l2', attemptId: 'att_l2', workerId: 'wrk_a', now: T0 + 60_002, result: success, next: { kind: 'complete' } });
        expect(late).toBe(false);
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_l2' })).toMatchObject({ status: 'QUEUED' });
        expect((await store.attemptListByJob('job_l2'))[0]).toMatchObject({ outcome: 'lease_expired' });
      });

      describe('async completion (SPEC section 11)', () => {
        const accepted = { statusCode: 202, responseBody: 'accepted' };
        /** A job STARTED by wrk_a at T0 and accepted with 202 at T0 + 10, its report due by T0 + 1 000 010. */
        async function acceptedJob(id: string, maxRetries = 1) {
          const project = await makeProject();
          await create(project, [job(id, { maxRetries })]);
          await claim(T0);
          await store.attemptStart({ jobId: id, attemptId: `att_${id}`, workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 60_000 });
          const ok = await store.attemptAccept({ jobId: id, attemptId: `att_${id}`, workerId: 'wrk_a', now: T0 + 10, deadline: T0 + 1_000_010, ...accepted });
          return { project, ok, attemptId: `att_${id}` };
        }
        const rescue = (now: number, expiredBefore = now) => store.jobRescueExpiredLeases({ now, expiredBefore, limit: 10, retryAt: () => now + 5 });

        it('an accept is the lease holder\'s only; it leaves the job STARTED and the attempt pending, its deadline in the lease', async () => {
          const { project, ok, attemptId } = await acceptedJob('job_a1');
          expect(ok).toBe(true);
          expect(await store.attemptAccept({ jobId: 'job_a1', attemptId, workerId: 'wrk_a', now: T0 + 11, deadline: T0 + 5, ...accepted })).toBe(false);
          expect(await store.jobGet({ projectId: project.id, jobId: 'job_a1' })).toMatchObject({ status: 'STARTED', attemptCount: 1, updatedAt: T0 });
          expect(await store.attemptListByJob('job_a1')).toEqual([
            expect.objectContaining({ id: attemptId, outcome: null, finishedAt: null, statusCode: 202, responseBody: 'accepted', acceptedAt: T0 + 10, reportedAt: null, reportBy: T0 + 1_000_010 }),
          ]);
          expect(await store.attemptGetWithJob({ jobId: 'job_a1', attemptId })).toMatchObject({ job: { id: 'job_a1', status: 'STARTED' }, project: { id: project.id }, attempt: { id: attemptId, reportBy: T0 + 1_000_010 } });
          expect(await store.attemptGetWithJob({ jobId: 'job_other', attemptId })).toBeNull();
          // The worker no longer holds it: its renewals and its finish change nothing.
          await store.jobLeaseRenew({ workerId: 'wrk_a', leases: [{ jobId: 'job_a1', leaseExpiresAt: T0 + 100 }] });
          expect(await store.attemptFinish({ jobId: 'job_a1', attemptId, workerId: 'wrk_a', now: T0 + 20, result: success, next: { kind: 'complete' } })).toBe(false);
          expect((await store.attemptListByJob('job_a1'))[0]).toMatchObject({ reportBy: T0 + 1_000_010, outcome: null });
        });

        it('a report ends the pending attempt once, keeping its 202; "running" moves the deadline; nothing applies past the deadline', async () => {
          const { project, attemptId } = await acceptedJob('job_a2');
          const running = await store.attemptReport({ jobId: 'job_a2', attemptId, now: T0 + 500, report: { kind: 'running', deadline: T0 + 2_000_000 } });
          expect(running).toBe(true);
          expect((await store.attemptListByJob('job_a2'))[0]).toMatchObject({ reportBy: T0 + 2_000_000, reportedAt: T0 + 500, outcome: null });
          const done = { outcome: 'success' as const, statusCode: null, durationMs: 1_000, error: null, responseBody: null };
          expect(await store.attemptReport({ jobId: 'job_a2', attemptId, now: T0 + 1_000, report: { kind: 'finish', result: done, next: { kind: 'complete' } } })).toBe(true);
          expect(await store.jobGet({ projectId: project.id, jobId: 'job_a2' })).toMatchObject({ status: 'COMPLETED', completedAt: T0 + 1_000 });
          expect((await store.attemptListByJob('job_a2'))[0]).toMatchObject({ outcome: 'success', statusCode: 202, responseBody: 'accepted', reportedAt: T0 + 1_000, finishedAt: T0 + 1_000, reportBy: null });
          // Once ended, no report applies.
          expect(await store.attemptReport({ jobId: 'job_a2', attemptId, now: T0 + 1_001, report: { kind: 'finish', result: done, next: { kind: 'complete' } } })).toBe(false);
          expect(await store.attemptReport({ jobId: 'job_a2', attemptId, now: T0 + 1_001, report: { kind: 'running', deadline: T0 + 9_000_000 } })).toBe(false);

          const late = await acceptedJob('job_a3');
          expect(await store.attemptReport({ jobId: 'job_a3', attemptId: late.attemptId, now: T0 + 1_000_010, report: { kind: 'running', deadline: T0 + 3_000_000 } })).toBe(false);
          expect(await store.attemptReport({ jobId: 'job_a3', attemptId: late.attemptId, now: T0 + 1_000_010, report: { kind: 'finish', result: done, next: { kind: 'complete' } } })).toBe(false);
          expect(await store.jobGet({ projectId: late.project.id, jobId: 'job_a3' })).toMatchObject({ status: 'STARTED' });
        });

        it('a failure report retries or fails the job as a failed attempt does', async () => {
          const { project, attemptId } = await acceptedJob('job_a4', 1);
          const failed = { outcome: 'http_error' as const, statusCode: null, durationMs: 50, error: 'out of disk', responseBody: null };
          expect(await store.attemptReport({ jobId: 'job_a4', attemptId, now: T0 + 50, report: { kind: 'finish', result: failed, next: { kind: 'retry', runAt: T0 + 1_050 } } })).toBe(true);
          expect(await store.jobGet({ projectId: project.id, jobId: 'job_a4' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 1_050, lastError: 'out of disk' });
          expect((await store.attemptListByJob('job_a4'))[0]).toMatchObject({ outcome: 'http_error', statusCode: 202, error: 'out of disk', reportedAt: T0 + 50 });
          expect((await claim(T0 + 1_050)).map((j) => j.id)).toEqual(['job_a4']);
        });

        it('the lease rescue ends an unreported attempt as timeout at its deadline, never earlier, even when taking over every lease at start', async () => {
          const { project, attemptId } = await acceptedJob('job_a5', 1);
          // A start's take-over of every lease (expiredBefore far ahead) leaves a deadline still ahead alone.
          expect(await rescue(T0 + 20, Number.MAX_SAFE_INTEGER)).toEqual([]);
          expect(await rescue(T0 + 1_000_010)).toEqual([]);
          const rescued = await rescue(T0 + 1_000_011);
          expect(rescued).toEqual([expect.objectContaining({ attemptNumber: 1, awaitedReport: true })]);
          expect(await store.jobGet({ projectId: project.id, jobId: 'job_a5' })).toMatchObject({ status: 'QUEUED', runAt: T0 + 1_000_016 });
          expect((await store.attemptListByJob('job_a5'))[0]).toMatchObject({
            outcome: 'timeout',
            statusCode: 202,
            responseBody: 'accepted',
            reportedAt: null,
            finishedAt: T0 + 1_000_011,
            error: expect.stringContaining('no report within asyncCompletionTimeoutMs'),
          });
          expect(await store.attemptReport({ jobId: 'job_a5', attemptId, now: T0 + 1_000_012, report: { kind: 'running', deadline: T0 + 9_000_000 } })).toBe(false);
        });
      });

      it('renews leases for the holder, and releases DISPATCHED jobs on shutdown', async () => {
        const project = await makeProject();
        await create(project, [job('job_n1'), job('job_n2')]);
        await claim(T0);
        await store.attemptStart({ jobId: 'job_n2', attemptId: 'att_n2', workerId: 'wrk_a', now: T0, leaseExpiresAt: T0 + 60_000 });
        await store.jobLeaseRenew({ workerId: 'wrk_a', leases: [{ jobId: 'job_n1', leaseExpiresAt: T0 + 500_000 }, { jobId: 'job_n2', leaseExpiresAt: T0 + 500_000 }] });
        await store.jobLeaseRenew({ workerId: 'wrk_b', leases: [{ jobId: 'job_n1', leaseExpiresAt: T0 + 1 }] });
        expect(await store.jobRescueExpiredLeases({ now: T0 + 400_000, expiredBefore: T0 + 400_000, limit: 10, retryAt: () => null })).toEqual([]);
        expect(await store.jobReleaseDispatched({ workerId: 'wrk_a', now: T0 + 7 })).toBe(1);
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_n1' })).toMatchObject({ status: 'QUEUED', runAt: T0, queuedAt: T0 });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_n2' })).toMatchObject({ status: 'STARTED' });
      });
    });

    it('lists no attempts for a new job and reports usage for a quiet team as empty', async () => {
      const project = await makeProject();
      await create(project, [job('job_at1')]);
      expect(await store.attemptListByJob('job_at1')).toEqual([]);
      expect(await store.usageDaily({ teamId: 'team_quiet', fromDay: '2027-03-01', toDay: '2027-04-01' })).toEqual([]);
    });

    it('lists a project\'s jobs created within a time range, with or without a status', async () => {
      const project = await makeProject();
      await create(project, [job('job_r1')], { now: T0 });
      await create(project, [job('job_r2')], { now: T0 + 1_000 });
      await create(project, [job('job_r3')], { now: T0 + 2_000 });
      await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_r2', now: T0 + 3_000 });
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      const base = { projectId: project.id, beforeSeq: null, limit: 10 };
      expect(ids(await store.jobList({ ...base, status: null, createdFrom: T0 + 1_000, createdBefore: T0 + 2_000 }))).toEqual(['job_r2']);
      expect(ids(await store.jobList({ ...base, status: null, createdFrom: T0 + 1_000 }))).toEqual(['job_r3', 'job_r2']);
      expect(ids(await store.jobList({ ...base, status: null, createdBefore: T0 + 1_000 }))).toEqual(['job_r1']);
      expect(ids(await store.jobList({ ...base, status: 'CANCELLED', createdFrom: T0 }))).toEqual(['job_r2']);
      expect(ids(await store.jobList({ ...base, status: 'QUEUED', createdFrom: T0, limit: 1 }))).toEqual(['job_r3']);
    });

    // Read by (created_at, seq) so that a window is found from its end in an index whatever its age:
    // a job stamped by an instance whose clock is behind is listed at its creation time.
    it("lists a window or a schedule's jobs newest first by creation time, then insertion, and pages through them by cursor", async () => {
      const project = await makeProject();
      const ofSchedule = (id: string, fireAt: number) => job(id, { scheduledFor: fireAt, runAt: fireAt, schedule: { id: 'sch_order', fireAt } });
      await create(project, [ofSchedule('job_o1', T0 + 1)], { now: T0 + 2_000 });
      await create(project, [ofSchedule('job_o2', T0 + 2)], { now: T0 + 1_000 });
      await create(project, [ofSchedule('job_o3', T0 + 3), job('job_o4')], { now: T0 + 1_500 });
      await create(project, [ofSchedule('job_o5', T0 + 5), job('job_o6')], { now: T0 + 1_000 });
      await create(project, [job('job_o7')], { now: T0 + 3_000 });
      await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_o3', now: T0 + 4_000 });
      const ids = (rows: { id: string }[]) => rows.map((r) => r.id);
      /** Every page of `filter`, two at a time, each from the cursor (seq and creation time) of the last job of the one before. */
      async function pages(filter: Partial<JobListParams>): Promise<string[][]> {
        const found: string[][] = [];
        let cursor: Pick<JobListParams, 'beforeSeq' | 'beforeCreatedAt'> = { beforeSeq: null, beforeCreatedAt: null };
        for (;;) {
          const page = await store.jobList({ projectId: project.id, status: null, ...filter, ...cursor, limit: 2 });
          if (page.length > 0) found.push(ids(page));
          if (page.length < 2 || found.length > 5) return found;
          cursor = { beforeSeq: page[1]!.seq, beforeCreatedAt: page[1]!.createdAt };
        }
      }
      const window = { createdFrom: T0 + 1_000, createdBefore: T0 + 3_000 };
      expect(await pages(window)).toEqual([['job_o1', 'job_o4'], ['job_o3', 'job_o6'], ['job_o5', 'job_o2']]);
      expect(await pages({ ...window, status: 'QUEUED' })).toEqual([['job_o1', 'job_o4'], ['job_o6', 'job_o5'], ['job_o2']]);
      expect(await pages({ scheduleId: 'sch_order' })).toEqual([['job_o1', 'job_o3'], ['job_o5', 'job_o2']]);
      expect(await pages({ scheduleId: 'sch_order', status: 'QUEUED', createdBefore: T0 + 2_000 })).toEqual([['job_o5', 'job_o2']]);
      // A cursor later than the window's end reads from the window's end.
      expect(ids(await store.jobList({ projectId: project.id, status: null, ...window, beforeSeq: 1e9, beforeCreatedAt: T0 + 9_000, limit: 1 }))).toEqual(['job_o1']);
    });

    describe('project overview', () => {
      const MIN = 60_000;
      const HOUR = 60 * MIN;
      // The clock of every overview below: 30 s into the minute 12:00 UTC.
      const NOW = T0 + 30_000;
      const success = { outcome: 'success' as const, statusCode: 200, durationMs: 5, error: null, responseBody: 'ok' };
      const http500 = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };
      const timeout = { outcome: 'timeout' as const, statusCode: null, durationMs: 10_000, error: 'no answer within 10000 ms', responseBody: null };
      const refused = { outcome: 'network_error' as const, statusCode: null, durationMs: 1, error: 'connect ECONNREFUSED', responseBody: null };
      type Result = typeof success | typeof http500 | typeof timeout | typeof refused;

      /** Claims the one job due by `at` (no other job may be due then) and starts its attempt `attemptId` at `at`. */
      async function start(jobId: string, attemptId: string, at: number, dueBy = at) {
        const claimed = await store.jobClaimDue({ now: at, dueBy, limit: 1, workerId: 'wrk_o', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
        expect(claimed.map((j) => j.id)).toEqual([jobId]);
        expect(await store.attemptStart({ jobId, attemptId, workerId: 'wrk_o', now: at, leaseExpiresAt: at + 60_000 })).not.toBeNull();
      }

      /** A new job due at `due`, its first attempt started at `startAt` and finished at `finishAt` with `result`; failed ones fail the job. */
      async function deliver(project: ProjectRow, jobId: string, o: { due: number; startAt?: number; finishAt: number; result: Result; attemptId?: string }) {
        await create(project, [job(jobId, { runAt: o.due, maxRetries: 0 })], { now: o.due });
        const attemptId = o.attemptId ?? `att_${jobId}`;
        await start(jobId, attemptId, o.startAt ?? o.finishAt);
        const next: AttemptNext = o.result.outcome === 'success' ? { kind: 'complete' } : { kind: 'fail' };
        expect(await store.attemptFinish({ jobId, attemptId, workerId: 'wrk_o', now: o.finishAt, result: o.result, next })).toBe(true);
      }

      it('counts a new project as empty', async () => {
        const project = await makeProject();
        expect(await store.projectOverview({ projectId: project.id, now: NOW })).toEqual({
          jobsByStatus: { QUEUED: 0, DISPATCHED: 0, STARTED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 },
          deliveryMinutes: [],
          lateness: { firstAttempts: 0, p50Ms: null, p99Ms: null },
          recentFailures: [],
        });
      });

      it("counts a project's jobs by status now, up to the limit asked, and never another project's", async () => {
        const project = await makeProject();
        const other = await makeProject();
        await create(other, [job('job_c_other1', { runAt: T0 + 400 * DAY_MS }), job('job_c_other2', { runAt: T0 + 400 * DAY_MS })]);
        await create(project, [job('job_c_q1', { runAt: T0 + 400 * DAY_MS }), job('job_c_q2', { runAt: T0 + 400 * DAY_MS }), job('job_c_q3', { runAt: T0 + 400 * DAY_MS })]);
        await deliver(project, 'job_c_done', { due: T0 - 5_000, finishAt: T0 - 5_000, result: success });
        await deliver(project, 'job_c_failed', { due: T0 - 4_000, finishAt: T0 - 4_000, result: http500 });
        await create(project, [job('job_c_started', { runAt: T0 - 3_000 })]);
        await start('job_c_started', 'att_c_started', T0 - 3_000);
        await create(project, [job('job_c_dispatched', { runAt: T0 - 2_000 })]);
        expect((await store.jobClaimDue({ now: T0 - 2_000, dueBy: T0 - 2_000, limit: 1, workerId: 'wrk_o', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) })).map((j) => j.id)).toEqual(['job_c_dispatched']);
        expect((await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_c_q3', now: T0 })).ok).toBe(true);
        const counts = { QUEUED: 2, DISPATCHED: 1, STARTED: 1, COMPLETED: 1, FAILED: 1, CANCELLED: 1 };
        expect((await store.projectOverview({ projectId: project.id, now: NOW })).jobsByStatus).toEqual(counts);
        expect((await store.projectOverview({ projectId: other.id, now: NOW })).jobsByStatus).toEqual({ QUEUED: 2, DISPATCHED: 0, STARTED: 0, COMPLETED: 0, FAILED: 0, CANCELLED: 0 });
        // Counted up to the limit: past it, the limit + 1.
        await create(project, [job('job_c_q4', { runAt: T0 + 400 * DAY_MS }), job('job_c_q5', { runAt: T0 + 400 * DAY_MS })]);
        expect((await store.projectOverview({ projectId: project.id, now: NOW, jobCountLimit: 2 })).jobsByStatus).toEqual({ ...counts, QUEUED: 3 });
        expect((await store.projectOverview({ projectId: project.id, now: NOW, jobCountLimit: 4 })).jobsByStatus).toEqual({ ...counts, QUEUED: 4 });
      });

      it('counts attempts finished per minute over the 1,440 minutes ending with the current one, and failures among them, lease losses included', async () => {
        const project = await makeProject();
        const other = await makeProject();
        const first = NOW - (NOW % MIN) - 1_439 * MIN;
        // Before the window: 25 hours ago, and the last millisecond before its first minute.
        await deliver(project, 'job_m_old', { due: NOW - 25 * HOUR, finishAt: NOW - 25 * HOUR, result: success });
        await deliver(project, 'job_m_edge', { due: first - 1, finishAt: first - 1, result: http500 });
        await deliver(project, 'job_m_first', { due: first, finishAt: first, result: success });
        // 11:57: a lease lost (the rescue records it at 11:57:20, as lease_expired).
        await create(project, [job('job_m_lost', { runAt: T0 - 3 * MIN, maxRetries: 0 })], { now: T0 - 3 * MIN });
        await start('job_m_lost', 'att_m_lost', T0 - 3 * MIN);
        const rescueAt = T0 - 3 * MIN + 20_000;
        // Its lease ends at 11:58: taken over at once, as at a start after a crash.
        expect(await store.jobRescueExpiredLeases({ now: rescueAt, expiredBefore: T0 - 2 * MIN + 1, limit: 10, retryAt: () => null })).toHaveLength(1);
        // 11:58: a success and a 500; another project's attempts that minute.
        await deliver(project, 'job_m_ok', { due: T0 - 2 * MIN + 10_000, finishAt: T0 - 2 * MIN + 10_000, result: success });
        await deliver(project, 'job_m_500', { due: T0 - 2 * MIN + 50_000, finishAt: T0 - 2 * MIN + 50_000, result: http500 });
        await deliver(other, 'job_m_theirs1', { due: T0 - 2 * MIN + 20_000, finishAt: T0 - 2 * MIN + 20_000, result: http500 });
        await deliver(other, 'job_m_theirs2', { due: T0 - 2 * MIN + 21_000, finishAt: T0 - 2 * MIN + 21_000, result: success });
        // 11:59: refused, then its retry succeeds in the same minute.
        await create(project, [job('job_m_retry', { runAt: T0 - MIN, maxRetries: 1 })], { now: T0 - MIN });
        await start('job_m_retry', 'att_m_retry1', T0 - MIN);
        await store.attemptFinish({ jobId: 'job_m_retry', attemptId: 'att_m_retry1', workerId: 'wrk_o', now: T0 - MIN + 500, result: refused, next: { kind: 'retry', runAt: T0 - 30_000 } });
        await start('job_m_retry', 'att_m_retry2', T0 - 30_000);
        await store.attemptFinish({ jobId: 'job_m_retry', attemptId: 'att_m_retry2', workerId: 'wrk_o', now: T0 - 29_000, result: success, next: { kind: 'complete' } });
        // 12:00, the current minute: a timeout 20 s in.
        await deliver(project, 'job_m_timeout', { due: T0 + 5_000, startAt: T0 + 10_000, finishAt: T0 + 20_000, result: timeout });
        // Started but not finished: not counted until it finishes.
        await create(project, [job('job_m_running', { runAt: T0 + 21_000 })], { now: T0 + 21_000 });
        await start('job_m_running', 'att_m_running', T0 + 21_000);

        const overview = await store.projectOverview({ projectId: project.id, now: NOW });
        expect(overview.deliveryMinutes).toEqual([
          { minute: first, attempts: 1, failedAttempts: 0 },
          { minute: T0 - 3 * MIN, attempts: 1, failedAttempts: 1 },
          { minute: T0 - 2 * MIN, attempts: 2, failedAttempts: 1 },
          { minute: T0 - MIN, attempts: 2, failedAttempts: 1 },
          { minute: T0, attempts: 1, failedAttempts: 1 },
        ]);
        expect(overview.recentFailures).toEqual([
          { jobId: 'job_m_timeout', attemptId: 'att_job_m_timeout', attemptNumber: 1, finishedAt: T0 + 20_000, outcome: 'timeout', statusCode: null, error: 'no answer within 10000 ms' },
          { jobId: 'job_m_retry', attemptId: 'att_m_retry1', attemptNumber: 1, finishedAt: T0 - MIN + 500, outcome: 'network_error', statusCode: null, error: 'connect ECONNREFUSED' },
          { jobId: 'job_m_500', attemptId: 'att_job_m_500', attemptNumber: 1, finishedAt: T0 - 2 * MIN + 50_000, outcome: 'http_error', statusCode: 500, error: 'HTTP 500' },
          {
            jobId: 'job_m_lost',
            attemptId: 'att_m_lost',
            attemptNumber: 1,
            finishedAt: rescueAt,
            outcome: 'lease_expired',
            statusCode: null,
            error: 'lease expired: the worker stopped before the attempt finished',
          },
        ]);
        expect((await store.projectOverview({ projectId: other.id, now: NOW })).deliveryMinutes).toEqual([{ minute: T0 - 2 * MIN, attempts: 2, failedAttempts: 1 }]);
        // A minute later the window has moved on by one: its first minute is out.
        expect((await store.projectOverview({ projectId: project.id, now: NOW + MIN })).deliveryMinutes[0]).toEqual({ minute: T0 - 3 * MIN, attempts: 1, failedAttempts: 1 });
      });

      it('lists the latest failed attempts newest first, at most ten, the later attempt id first at the same instant', async () => {
        const project = await makeProject();
        const other = await makeProject();
        for (let i = 0; i < 11; i += 1) await deliver(project, `job_f${String(i).padStart(2, '0')}`, { due: T0 - 20 * MIN + i * MIN, finishAt: T0 - 20 * MIN + i * MIN, result: http500 });
        // Two at the same instant, the newest of all.
        await create(project, [job('job_f_tie1', { runAt: T0 }), job('job_f_tie2', { runAt: T0 + 1 })], { now: T0 });
        await start('job_f_tie1', 'att_f_tie1', T0);
        await start('job_f_tie2', 'att_f_tie2', T0 + 1);
        for (const id of ['tie2', 'tie1']) {
          await store.attemptFinish({ jobId: `job_f_${id}`, attemptId: `att_f_${id}`, workerId: 'wrk_o', now: T0 + 5_000, result: refused, next: { kind: 'fail' } });
        }
        await deliver(other, 'job_f_theirs', { due: T0 + 6_000, finishAt: T0 + 6_000, result: http500 });
        const listed = (await store.projectOverview({ projectId: project.id, now: NOW })).recentFailures.map((f) => f.attemptId);
        expect(listed).toEqual(['att_f_tie2', 'att_f_tie1', ...[10, 9, 8, 7, 6, 5, 4, 3].map((i) => `att_job_f${String(i).padStart(2, '0')}`)]);
      });

      it('answers the median and 99th percentile of first attempts\' lateness over the last 60 minutes, as the top of their 2^(1/4) bucket', async () => {
        const project = await makeProject();
        const other = await makeProject();
        // The window's 60 minutes start at 11:01: one started a millisecond before is out.
        await deliver(project, 'job_l_old', { due: T0 - 59 * MIN - 100_000, startAt: T0 - 59 * MIN - 1, finishAt: T0 - 59 * MIN - 1, result: success });
        // Inside: on time, 3 ms, 100 ms and 2 s late, and one started 2 ms early (claimed ahead).
        await deliver(project, 'job_l_0', { due: T0 - 59 * MIN, finishAt: T0 - 59 * MIN, result: success });
        await deliver(project, 'job_l_3', { due: T0 - 50 * MIN, startAt: T0 - 50 * MIN + 3, finishAt: T0 - 50 * MIN + 10, result: success });
        await deliver(project, 'job_l_2000', { due: T0 - 40 * MIN, startAt: T0 - 40 * MIN + 2_000, finishAt: T0 - 40 * MIN + 2_010, result: success });
        await create(project, [job('job_l_early', { runAt: T0 - 20 * MIN })], { now: T0 - 30 * MIN });
        await start('job_l_early', 'att_l_early', T0 - 20 * MIN - 2, T0 - 20 * MIN);
        // 100 ms late, then a retry started much later: only the first attempt counts.
        await create(project, [job('job_l_100', { runAt: T0 - 10 * MIN, maxRetries: 1 })], { now: T0 - 10 * MIN });
        await start('job_l_100', 'att_l_100a', T0 - 10 * MIN + 100);
        await store.attemptFinish({ jobId: 'job_l_100', attemptId: 'att_l_100a', workerId: 'wrk_o', now: T0 - 10 * MIN + 200, result: http500, next: { kind: 'retry', runAt: T0 - 5 * MIN } });
        await start('job_l_100', 'att_l_100b', T0 + 20_000);
        // Another project's very late first attempt.
        await deliver(other, 'job_l_theirs', { due: T0 - HOUR, startAt: T0 + 1_000, finishAt: T0 + 1_001, result: success });

        // Sorted: early (bucket 0: 0 ms), 0, 3, 100 (bucket 91..107), 2000 (bucket 1723..2047).
        expect((await store.projectOverview({ projectId: project.id, now: NOW })).lateness).toEqual({ firstAttempts: 5, p50Ms: 3, p99Ms: 2_047 });
        // 3,601,000 ms late: the bucket from 3,526,976 to 4,194,303.
        expect((await store.projectOverview({ projectId: other.id, now: NOW })).lateness).toEqual({ firstAttempts: 1, p50Ms: 4_194_303, p99Ms: 4_194_303 });
        // 25 minutes on, the window starts at 11:26: the early one and the 100 ms one are left.
        expect((await store.projectOverview({ projectId: project.id, now: NOW + 25 * MIN })).lateness).toEqual({ firstAttempts: 2, p50Ms: 0, p99Ms: 107 });
      });

      it("changes no figure when it folds past minutes' rows (PostgreSQL's shards), and finds nothing left to fold after", async () => {
        const project = await makeProject();
        for (let i = 0; i < 8; i += 1) {
          const at = T0 - 4 * MIN + i * 25_000;
          await deliver(project, `job_k${i}`, { due: at - i, startAt: at, finishAt: at + 5, result: i % 3 === 0 ? http500 : success });
        }
        const before = await store.projectOverview({ projectId: project.id, now: NOW });
        expect(before.deliveryMinutes.reduce((sum, m) => sum + m.attempts, 0)).toBe(8);
        expect(await store.overviewCompact({ before: T0, limit: 100 })).toBeGreaterThanOrEqual(0);
        expect(await store.projectOverview({ projectId: project.id, now: NOW })).toEqual(before);
        expect(await store.overviewCompact({ before: T0, limit: 100 })).toBe(0);
      });

      it('prunes its rows of minutes before the cut-off, every project\'s, up to the limit at a time', async () => {
        const project = await makeProject();
        const other = await makeProject();
        await deliver(project, 'job_p_old', { due: NOW - 2 * DAY_MS, finishAt: NOW - 2 * DAY_MS, result: http500 });
        await deliver(other, 'job_p_old2', { due: NOW - 2 * DAY_MS + 1, finishAt: NOW - 2 * DAY_MS + 1, result: success });
        await deliver(project, 'job_p_new', { due: T0, finishAt: T0, result: http500 });
        const before = NOW - DAY_MS;
        // Old: two minute rows, two lateness rows and one failure.
        const pruned: number[] = [];
        for (;;) {
          const n = await store.overviewPrune({ before, limit: 2 });
          pruned.push(n);
          if (n < 2) break;
        }
        expect(pruned.every((n) => n <= 2)).toBe(true);
        expect(pruned.reduce((a, b) => a + b, 0)).toBe(5);
        const then = await store.projectOverview({ projectId: project.id, now: NOW - 2 * DAY_MS + MIN });
        expect(then).toMatchObject({ deliveryMinutes: [], recentFailures: [], lateness: { firstAttempts: 0 } });
        const now = await store.projectOverview({ projectId: project.id, now: NOW });
        expect(now.deliveryMinutes).toEqual([{ minute: T0, attempts: 1, failedAttempts: 1 }]);
        expect(now.recentFailures.map((f) => f.jobId)).toEqual(['job_p_new']);
        expect(now.lateness.firstAttempts).toBe(1);
      });
    });

    describe('retention (SPEC section 12)', () => {
      const DAY = 86_400_000;
      const success = { outcome: 'success' as const, statusCode: 200, durationMs: 5, error: null, responseBody: 'ok' };
      const failure = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };

      /** Takes a QUEUED job due by `at` through one attempt with this result and what follows it. */
      async function attempt(jobId: string, at: number, result: typeof success | typeof failure, next: AttemptNext) {
        const claimed = await store.jobClaimDue({ now: at, dueBy: at, limit: 1, workerId: 'wrk_r', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
        expect(claimed.map((j) => j.id)).toEqual([jobId]);
        const attemptId = `att_${jobId}_${at}`;
        expect(await store.attemptStart({ jobId, attemptId, workerId: 'wrk_r', now: at, leaseExpiresAt: at + 60_000 })).not.toBeNull();
        expect(await store.attemptFinish({ jobId, attemptId, workerId: 'wrk_r', now: at + 5, result, next })).toBe(true);
      }

      /** One job of each final status, final at T0 + 5, plus a job waiting and one waiting for its retry. */
      async function finalAndLiveJobs(project: ProjectRow) {
        // Due one after the other, so that each claim (earliest due first) takes the next one.
        await create(project, [
          job('job_done', { runAt: T0 - 3 }),
          job('job_failed', { runAt: T0 - 2, maxRetries: 0 }),
          job('job_retrying', { runAt: T0 - 1 }),
          job('job_cancelled', { runAt: T0 + DAY }),
        ]);
        await create(project, [job('job_waiting', { runAt: T0 + 400 * DAY })]);
        await attempt('job_done', T0, success, { kind: 'complete' });
        await attempt('job_failed', T0, failure, { kind: 'fail' });
        await attempt('job_retrying', T0, failure, { kind: 'retry', runAt: T0 + 500 * DAY });
        expect((await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_cancelled', now: T0 + 5 })).ok).toBe(true);
      }

      const exists = async (project: ProjectRow, jobId: string) => (await store.jobGet({ projectId: project.id, jobId })) !== null;

      it('deletes final jobs with their attempts once they became final at or before the cut-off, never a job still to run', async () => {
        const project = await makeProject();
        await finalAndLiveJobs(project);
        const cutoffs = (finalBy: number) => ({ projects: [{ projectId: project.id, finalBy }], idempotencyCreatedBy: 0, usageBeforeDay: '2000-01-01', eventsOccurredBy: 0 });
        expect(await store.pruneCount(cutoffs(T0 + 4))).toEqual({ jobs: 0, attempts: 0, idempotencyKeys: 0, usageRows: 0, events: 0 });
        expect(await store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 4, limit: 100 })).toEqual({ jobs: 0, attempts: 0 });
        expect(await store.pruneCount(cutoffs(T0 + 5))).toEqual({ jobs: 3, attempts: 2, idempotencyKeys: 0, usageRows: 0, events: 0 });
        expect(await store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 5, limit: 100 })).toEqual({ jobs: 3, attempts: 2 });
        for (const gone of ['job_done', 'job_failed', 'job_cancelled']) expect(await exists(project, gone)).toBe(false);
        expect(await store.attemptListByJob('job_done')).toEqual([]);
        expect(await store.attemptListByJob('job_failed')).toEqual([]);
        // Still to run, whatever the cut-off: a job waiting, and one whose retry is due later.
        expect(await store.jobPruneFinal({ projectId: project.id, finalBy: Number.MAX_SAFE_INTEGER, limit: 100 })).toEqual({ jobs: 0, attempts: 0 });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_waiting' })).toMatchObject({ status: 'QUEUED' });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_retrying' })).toMatchObject({ status: 'QUEUED', attemptCount: 1 });
        expect(await store.attemptListByJob('job_retrying')).toHaveLength(1);
        expect(await store.jobCountByStatus()).toMatchObject({ QUEUED: 2, COMPLETED: 0, FAILED: 0, CANCELLED: 0 });
      });

      it('deletes in batches of the limit, the longest final first, and only the project asked for', async () => {
        const project = await makeProject();
        const other = await makeProject();
        await create(project, [job('job_b1'), job('job_b2'), job('job_b3')]);
        await create(other, [job('job_other')]);
        await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_b2', now: T0 + 1 });
        await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_b3', now: T0 + 2 });
        await store.jobCancelIfQueued({ projectId: project.id, jobId: 'job_b1', now: T0 + 3 });
        await store.jobCancelIfQueued({ projectId: other.id, jobId: 'job_other', now: T0 });
        expect(await store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 10, limit: 2 })).toEqual({ jobs: 2, attempts: 0 });
        expect(await exists(project, 'job_b1')).toBe(true);
        expect(await exists(project, 'job_b2')).toBe(false);
        expect(await exists(project, 'job_b3')).toBe(false);
        expect(await store.jobPruneFinal({ projectId: project.id, finalBy: T0 + 10, limit: 2 })).toEqual({ jobs: 1, attempts: 0 });
        expect(await exists(other, 'job_other')).toBe(true);
      });

      it('a failed job retried is no longer final, and is kept', async () => {
        const project = await makeProject();
        await create(project, [job('job_again', { maxRetries: 0 })]);
        await attempt('job_again', T0, failure, { kind: 'fail' });
        expect((await store.jobRetryIfFailed({ projectId: project.id, jobId: 'job_again', now: T0 + 10 })).ok).toBe(true);
        expect(await store.jobPruneFinal({ projectId: project.id, finalBy: T0 + DAY, limit: 10 })).toEqual({ jobs: 0, attempts: 0 });
        expect(await store.attemptListByJob('job_again')).toHaveLength(1);
      });

      it('two instances pruning the same project at once delete each job once', async () => {
        const project = await makeProject();
        const ids = Array.from({ length: 60 }, (_, i) => `job_many${i}`);
        await create(project, ids.map((id) => job(id)));
        for (const [i, id] of ids.entries()) await store.jobCancelIfQueued({ projectId: project.id, jobId: id, now: T0 + i });
        const second = database.openStore();
        try {
          const drain = async (instance: Store) => {
            let deleted = 0;
            for (;;) {
              const { jobs } = await instance.jobPruneFinal({ projectId: project.id, finalBy: T0 + 100, limit: 7 });
              if (jobs === 0) return deleted;
              deleted += jobs;
            }
          };
          const [a, b] = await Promise.all([drain(store), drain(second)]);
          expect(a + b).toBe(60);
        } finally {
          await second.close();
        }
        expect(await store.jobCountByStatus()).toMatchObject({ CANCELLED: 0 });
      });

      it('deletes idempotency keys created at or before the cut-off, and usage days before the cut-off day', async () => {
        const project = await makeProject();
        const idem = { endpoint: 'dispatch', key: 'k-old', requestHash: 'h', validAfter: T0 - DAY };
        await create(project, [job('job_k1')], { idempotency: idem });
        await create(project, [job('job_k2')], { idempotency: { ...idem, key: 'k-new' }, now: T0 + 1 });
        const day = new Date(T0).toISOString().slice(0, 10);
        const nextDay = new Date(T0 + DAY).toISOString().slice(0, 10);
        // PostgreSQL spreads a day's usage over up to 16 rows (0003_shard_usage_daily.sql): rows, not days, are counted.
        const counted = await store.pruneCount({ projects: [], idempotencyCreatedBy: T0, usageBeforeDay: nextDay, eventsOccurredBy: 0 });
        expect(counted.idempotencyKeys).toBe(1);
        expect(counted.usageRows).toBeGreaterThan(0);
        expect(await store.idempotencyKeyPrune({ createdBy: T0 - 1, limit: 10 })).toBe(0);
        expect(await store.idempotencyKeyPrune({ createdBy: T0, limit: 10 })).toBe(1);
        // The key that went answers as new; the one kept still replays.
        expect((await create(project, [job('job_k3')], { idempotency: { ...idem, validAfter: 0 } })).kind).toBe('created');
        expect((await create(project, [job('job_k4')], { idempotency: { ...idem, key: 'k-new', validAfter: 0 } })).kind).toBe('replayed');
        expect(await store.usagePrune({ beforeDay: day, limit: 10 })).toBe(0);
        const usageRows = (await store.pruneCount({ projects: [], idempotencyCreatedBy: 0, usageBeforeDay: nextDay, eventsOccurredBy: 0 })).usageRows;
        expect(await store.usagePrune({ beforeDay: nextDay, limit: 100 })).toBe(usageRows);
        expect(await store.usageDaily({ teamId: project.teamId, fromDay: '2027-01-01', toDay: '2028-01-01' })).toEqual([]);
      });

      it("keeps a project's own retention, lists every project's, and reports the store's size", async () => {
        const project = await makeProject();
        const other = await makeProject();
        expect(await store.projectUpdate({ projectId: project.id, patch: { retentionDays: 7 } })).toMatchObject({ retentionDays: 7 });
        expect(await store.projectGet(project.id)).toMatchObject({ retentionDays: 7 });
        const listed = await store.projectListRetention();
        expect(listed).toContainEqual({ projectId: project.id, retentionDays: 7 });
        expect(listed).toContainEqual({ projectId: other.id, retentionDays: null });
        expect(await store.projectUpdate({ projectId: project.id, patch: { retentionDays: null } })).toMatchObject({ retentionDays: null });
        const size = await store.storeSize();
        expect(size.databaseBytes).toBeGreaterThan(0);
      });
    });

    describe('events (SPEC section 10)', () => {
      const failure = { outcome: 'http_error' as const, statusCode: 500, durationMs: 5, error: 'HTTP 500', responseBody: 'no' };
      const event = (project: ProjectRow, id: string, occurredAt = T0) => ({ id, projectId: project.id, type: 'job.failed' as const, occurredAt, data: '{"n":1}' });
      async function withEvents(): Promise<ProjectRow> {
        const project = await makeProject();
        return (await store.projectUpdate({ projectId: project.id, patch: { eventsUrl: 'http://127.0.0.1:1/events' } }))!;
      }
      const claim = (now: number, workerId = 'wrk_e') => store.eventClaimDue({ now, limit: 10, workerId, leaseExtraMs: 1_000 });

      it('records events only for a project with an eventsUrl, and lists them newest first by cursor', async () => {
        const quiet = await makeProject();
        expect(await store.eventInsert(event(quiet, 'evt_q'))).toBe(false);
        expect(await store.eventList({ projectId: quiet.id, beforeSeq: null, limit: 10 })).toEqual([]);
        const project = await withEvents();
        for (const id of ['evt_1', 'evt_2', 'evt_3']) expect(await store.eventInsert(event(project, id))).toBe(true);
        const page = await store.eventList({ projectId: project.id, beforeSeq: null, limit: 2 });
        expect(page.map((e) => e.id)).toEqual(['evt_3', 'evt_2']);
        expect(page[0]).toMatchObject({ projectId: project.id, type: 'job.failed', occurredAt: T0, data: '{"n":1}', status: 'PENDING', attemptCount: 0, nextAttemptAt: T0 });
        expect((await store.eventList({ projectId: project.id, beforeSeq: page[1]!.seq, limit: 2 })).map((e) => e.id)).toEqual(['evt_1']);
      });

      it("records job.failed with the attempt that failed the job, for its project's eventsUrl only", async () => {
        const project = await withEvents();
        const quiet = await makeProject();
        await create(project, [job('job_ef', { maxRetries: 0 })]);
        await create(quiet, [job('job_qf', { maxRetries: 0, runAt: T0 + 1 })]);
        await store.jobClaimDue({ now: T0 + 5, dueBy: T0 + 5, limit: 10, workerId: 'wrk_a', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) });
        for (const jobId of ['job_ef', 'job_qf']) {
          await store.attemptStart({ jobId, attemptId: `att_X${jobId}`, workerId: 'wrk_a', now: T0 + 5, leaseExpiresAt: T0 + 60_000 });
          await store.attemptFinish({ jobId, attemptId: `att_X${jobId}`, workerId: 'wrk_a', now: T0 + 9, result: failure, next: { kind: 'fail' } });
        }
        const [recorded] = await store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 });
        expect(recorded).toMatchObject({ id: 'evt_Xjob_ef', type: 'job.failed', occurredAt: T0 + 9, status: 'PENDING' });
        expect(JSON.parse(recorded!.data)).toEqual({ jobId: 'job_ef', attemptCount: 1, lastError: 'HTTP 500' });
        expect(await store.eventList({ projectId: quiet.id, beforeSeq: null, limit: 10 })).toEqual([]);
      });

      it('claims due events once, lets a lapsed claim be taken over, and records delivered, retry and failed only under the claim', async () => {
        const project = await withEvents();
        await store.eventInsert(event(project, 'evt_a', T0));
        await store.eventInsert(event(project, 'evt_later', T0 + 45_000));
        const [claimed, ...rest] = await claim(T0 + 1);
        expect(rest).toEqual([]);
        expect(claimed).toMatchObject({ id: 'evt_a', leaseUntil: T0 + 1 + 1_000 + 30_000 });
        expect(await claim(T0 + 2, 'wrk_other')).toEqual([]);
        // Lapsed: another worker takes it, and the first one's outcome no longer counts.
        const [taken] = await claim(claimed!.leaseUntil, 'wrk_other');
        expect(taken!.id).toBe('evt_a');
        const retry = { kind: 'retry' as const, at: T0 + 50_000, error: 'HTTP 503' };
        expect(await store.eventFinish({ eventId: 'evt_a', workerId: 'wrk_e', leaseUntil: claimed!.leaseUntil, now: T0 + 40_000, outcome: retry })).toBe(false);
        expect(await store.eventFinish({ eventId: 'evt_a', workerId: 'wrk_other', leaseUntil: taken!.leaseUntil, now: T0 + 40_000, outcome: retry })).toBe(true);
        const list = async () => Object.fromEntries((await store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 })).map((e) => [e.id, e]));
        expect((await list()).evt_a).toMatchObject({ status: 'PENDING', attemptCount: 1, nextAttemptAt: T0 + 50_000, lastError: 'HTTP 503' });
        expect((await claim(T0 + 49_999)).map((e) => e.id)).toEqual(['evt_later']);
        const [again] = await claim(T0 + 50_000);
        expect(await store.eventFinish({ eventId: 'evt_a', workerId: 'wrk_e', leaseUntil: again!.leaseUntil, now: T0 + 50_001, outcome: { kind: 'failed', error: 'HTTP 500' } })).toBe(true);
        expect((await list()).evt_a).toMatchObject({ status: 'FAILED', attemptCount: 2, nextAttemptAt: null, lastError: 'HTTP 500', deliveredAt: null });
        await store.eventInsert(event(project, 'evt_ok', T0 + 60_000));
        const [ok] = await claim(T0 + 60_000);
        expect(await store.eventFinish({ eventId: 'evt_ok', workerId: 'wrk_e', leaseUntil: ok!.leaseUntil, now: T0 + 60_001, outcome: { kind: 'delivered' } })).toBe(true);
        expect((await list()).evt_ok).toMatchObject({ status: 'DELIVERED', attemptCount: 1, deliveredAt: T0 + 60_001, nextAttemptAt: null });
        expect(await store.eventFinish({ eventId: 'evt_ok', workerId: 'wrk_e', leaseUntil: ok!.leaseUntil, now: T0 + 60_002, outcome: { kind: 'delivered' } })).toBe(false);
        // A sole instance starting takes over claims left by the process before it: due at once.
        await store.eventInsert(event(project, 'evt_left', T0 + 70_000));
        expect((await claim(T0 + 70_000, 'wrk_gone')).map((e) => e.id)).toEqual(['evt_left']);
        // evt_later's claim (above) was never finished either.
        expect(await store.eventReleaseClaims({ now: T0 + 70_001 })).toBe(2);
        expect((await claim(T0 + 70_001)).map((e) => e.id)).toEqual(['evt_later', 'evt_left']);
      });

      it('records webhook.failing at the 10th failure in a row, again only after an hour, and webhook.recovered at the first success', async () => {
        const project = await withEvents();
        const fail = (at: number, n = 1) => Array.from({ length: n }, (_, i) => ({ failed: true, error: `HTTP 50${i % 10}`, at: at + i, eventId: `evt_f${at + i}` }));
        const succeed = (at: number) => ({ failed: false, error: null, at, eventId: `evt_s${at}` });
        const types = async () => (await store.eventList({ projectId: project.id, beforeSeq: null, limit: 100 })).map((e) => [e.type, JSON.parse(e.data)]).reverse();
        // A success breaks a run of 9: nothing.
        await store.webhookHealthRecord({ projectId: project.id, outcomes: [...fail(T0, 9), succeed(T0 + 100)] });
        expect(await store.webhookHealthListFailing()).toEqual([]);
        await store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 200, 9) });
        expect(await store.webhookHealthListFailing()).toEqual([project.id]);
        expect(await types()).toEqual([]);
        await store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 300, 1) });
        expect(await types()).toEqual([['webhook.failing', { consecutiveFailures: 10, lastError: 'HTTP 500', since: new Date(T0 + 200).toISOString() }]]);
        // Still failing within the hour: no second event; at an hour, one more.
        await store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 400, 50) });
        await store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 300 + 3_600_000 - 1, 1) });
        expect(await types()).toHaveLength(1);
        await store.webhookHealthRecord({ projectId: project.id, outcomes: fail(T0 + 300 + 3_600_000, 1) });
        expect((await types())[1]).toEqual(['webhook.failing', { consecutiveFailures: 62, lastError: 'HTTP 500', since: new Date(T0 + 200).toISOString() }]);
        await store.webhookHealthRecord({ projectId: project.id, outcomes: [succeed(T0 + 4_000_000), succeed(T0 + 4_000_001)] });
        expect((await types()).slice(2)).toEqual([['webhook.recovered', { failingSince: new Date(T0 + 200).toISOString() }]]);
        expect(await store.webhookHealthListFailing()).toEqual([]);
      });

      it('records schedule.skipped with the advance of its schedule only', async () => {
        const project = await withEvents();
        const schedule = { id: 'sch_ev', projectId: project.id, name: null, cron: '* * * * *', timezone: 'UTC', payload: '{}', maxRetries: null, catchUp: 'latest' as const, overlap: 'skip' as const, paused: false, nextRunAt: T0, lastRunAt: null, lastJobId: null, skippedCount: 0, createdAt: T0, updatedAt: T0 };
        await store.scheduleInsert({ schedule, maxPerProject: 10 });
        const skipped = { id: 'evt_sk', projectId: project.id, type: 'schedule.skipped' as const, occurredAt: T0, data: JSON.stringify({ scheduleId: 'sch_ev', fireAt: new Date(T0).toISOString() }) };
        // A stale advance (the schedule moved on) records nothing.
        expect(await store.scheduleAdvance({ scheduleId: 'sch_ev', expectedNextRunAt: T0 - 1, nextRunAt: T0 + 60_000, lastRun: null, skipped: 1, now: T0, events: [skipped] })).toBe(false);
        expect(await store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 })).toEqual([]);
        expect(await store.scheduleAdvance({ scheduleId: 'sch_ev', expectedNextRunAt: T0, nextRunAt: T0 + 60_000, lastRun: null, skipped: 1, now: T0, events: [skipped] })).toBe(true);
        expect((await store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 })).map((e) => [e.id, e.type])).toEqual([['evt_sk', 'schedule.skipped']]);
      });

      it('prunes events that occurred at or before the cut-off', async () => {
        const project = await withEvents();
        await store.eventInsert(event(project, 'evt_old', T0));
        await store.eventInsert(event(project, 'evt_new', T0 + 1));
        expect((await store.pruneCount({ projects: [], idempotencyCreatedBy: 0, usageBeforeDay: '2000-01-01', eventsOccurredBy: T0 })).events).toBe(1);
        expect(await store.eventPrune({ occurredBy: T0, limit: 10 })).toBe(1);
        expect((await store.eventList({ projectId: project.id, beforeSeq: null, limit: 10 })).map((e) => e.id)).toEqual(['evt_new']);
      });
    });

    describe('schedules (SPEC section 9)', () => {
      const MINUTE = 60_000;
      const schedule = (project: ProjectRow, id: string, overrides: Partial<NewSchedule> = {}): NewSchedule => ({
        id,
        projectId: project.id,
        name: null,
        cron: '* * * * *',
        timezone: 'UTC',
        payload: '{"s":1}',
        maxRetries: null,
        catchUp: 'latest',
        overlap: 'allow',
        paused: false,
        nextRunAt: T0 + MINUTE,
        lastRunAt: null,
        lastJobId: null,
        skippedCount: 0,
        createdAt: T0,
        updatedAt: T0,
        ...overrides,
      });
      const fire = (project: ProjectRow, jobId: string, scheduleId: string, fireAt: number) =>
        create(project, [job(jobId, { scheduledFor: fireAt, runAt: fireAt, schedule: { id: scheduleId, fireAt } })]);

      it('inserts up to the per-project limit, reads, lists newest first, and keeps projects apart', async () => {
        const project = await makeProject();
        const other = await makeProject();
        expect(await store.scheduleInsert({ schedule: schedule(project, 'sch_1', { name: 'first', maxRetries: 2 }), maxPerProject: 2 })).toBe(true);
        expect(await store.scheduleInsert({ schedule: schedule(project, 'sch_2'), maxPerProject: 2 })).toBe(true);
        expect(await store.scheduleInsert({ schedule: schedule(project, 'sch_3'), maxPerProject: 2 })).toBe(false);
        expect(await store.scheduleInsert({ schedule: schedule(other, 'sch_4'), maxPerProject: 2 })).toBe(true);
        const first = await store.scheduleGet({ projectId: project.id, scheduleId: 'sch_1' });
        expect(first).toMatchObject({ ...schedule(project, 'sch_1', { name: 'first', maxRetries: 2 }), seq: expect.any(Number) });
        expect(await store.scheduleGet({ projectId: other.id, scheduleId: 'sch_1' })).toBeNull();
        const listed = await store.scheduleList({ projectId: project.id, beforeSeq: null, limit: 10 });
        expect(listed.map((s) => s.id)).toEqual(['sch_2', 'sch_1']);
        expect((await store.scheduleList({ projectId: project.id, beforeSeq: listed[0]!.seq, limit: 10 })).map((s) => s.id)).toEqual(['sch_1']);
      });

      it('updates settings and the next fire, only in its own project', async () => {
        const project = await makeProject();
        const other = await makeProject();
        await store.scheduleInsert({ schedule: schedule(project, 'sch_u'), maxPerProject: 10 });
        const settings = { name: 'n', cron: '0 * * * *', timezone: 'Europe/Paris', payload: '{"b":2}', maxRetries: 1, catchUp: 'all' as const, overlap: 'skip' as const, paused: true };
        expect(await store.scheduleUpdate({ projectId: other.id, scheduleId: 'sch_u', settings, nextRunAt: T0 + 60 * MINUTE, now: T0 + 1 })).toBeNull();
        const updated = await store.scheduleUpdate({ projectId: project.id, scheduleId: 'sch_u', settings, nextRunAt: T0 + 60 * MINUTE, now: T0 + 1 });
        expect(updated).toMatchObject({ ...settings, nextRunAt: T0 + 60 * MINUTE, updatedAt: T0 + 1, createdAt: T0 });
        expect(await store.scheduleGet({ projectId: project.id, scheduleId: 'sch_u' })).toEqual(updated);
      });

      it('creates one job per schedule and fire instant, however often the fire is tried, counting it once', async () => {
        const project = await makeProject();
        await store.scheduleInsert({ schedule: schedule(project, 'sch_f'), maxPerProject: 10 });
        await fire(project, 'job_f1', 'sch_f', T0 + MINUTE);
        await fire(project, 'job_f2', 'sch_f', T0 + MINUTE);
        await fire(project, 'job_f3', 'sch_f', T0 + 2 * MINUTE);
        // A trigger (no fire instant) is one more job, whatever exists.
        await create(project, [job('job_t1', { schedule: { id: 'sch_f', fireAt: null } }), job('job_t2', { schedule: { id: 'sch_f', fireAt: null } })]);
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_f2' })).toBeNull();
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_f1' })).toMatchObject({ scheduleId: 'sch_f', scheduledFor: T0 + MINUTE });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_t1' })).toMatchObject({ scheduleId: 'sch_f' });
        const usage = await store.usageDaily({ teamId: project.teamId, fromDay: '2027-03-01', toDay: '2027-04-01' });
        expect(usage).toEqual([{ day: '2027-03-10', jobsCreated: 4 }]);
      });

      it('claims due schedules once until the lease ends, and advances only from the fire it claimed', async () => {
        const project = await makeProject();
        await store.scheduleInsert({ schedule: schedule(project, 'sch_a', { nextRunAt: T0 + 2 * MINUTE }), maxPerProject: 10 });
        await store.scheduleInsert({ schedule: schedule(project, 'sch_b', { nextRunAt: T0 + MINUTE }), maxPerProject: 10 });
        await store.scheduleInsert({ schedule: schedule(project, 'sch_paused', { nextRunAt: T0, paused: true }), maxPerProject: 10 });
        await store.scheduleInsert({ schedule: schedule(project, 'sch_later', { nextRunAt: T0 + 10 * MINUTE }), maxPerProject: 10 });
        await store.scheduleInsert({ schedule: schedule(project, 'sch_never', { nextRunAt: null }), maxPerProject: 10 });
        const claim = (now: number) => store.scheduleClaimDue({ now, dueBy: T0 + 2 * MINUTE, leaseUntil: now + 30_000, limit: 10 });
        expect((await claim(T0)).map((s) => [s.id, s.heldUntil])).toEqual([
          ['sch_b', null],
          ['sch_a', null],
        ]);
        expect(await claim(T0 + 1)).toEqual([]);
        // The lease ran out (its holder died): another instance claims it, told when that lease ended.
        expect((await claim(T0 + 30_000)).map((s) => [s.id, s.heldUntil])).toEqual([
          ['sch_b', T0 + 30_000],
          ['sch_a', T0 + 30_000],
        ]);
        const advance = { scheduleId: 'sch_b', nextRunAt: T0 + 2 * MINUTE, lastRun: { at: T0 + MINUTE, jobId: 'job_x' }, skipped: 0, now: T0 + 30_001 };
        expect(await store.scheduleAdvance({ ...advance, expectedNextRunAt: T0 + MINUTE })).toBe(true);
        expect(await store.scheduleAdvance({ ...advance, expectedNextRunAt: T0 + MINUTE })).toBe(false);
        expect(await store.scheduleGet({ projectId: project.id, scheduleId: 'sch_b' })).toMatchObject({
          nextRunAt: T0 + 2 * MINUTE,
          lastRunAt: T0 + MINUTE,
          lastJobId: 'job_x',
        });
        // Advanced, it is free again and due at its next fire, held by no lease before this claim.
        expect((await claim(T0 + 30_002)).map((s) => [s.id, s.heldUntil])).toEqual([['sch_b', null]]);
        expect(await store.scheduleAdvance({ scheduleId: 'sch_a', expectedNextRunAt: T0 + 2 * MINUTE, nextRunAt: T0 + 3 * MINUTE, lastRun: null, skipped: 2, now: T0 })).toBe(true);
        expect(await store.scheduleGet({ projectId: project.id, scheduleId: 'sch_a' })).toMatchObject({ skippedCount: 2, lastRunAt: null, lastJobId: null });
      });

      it('pausing a schedule cancels its jobs for instants after the pause not yet started, creates none of them until resumed, and gives their instants up', async () => {
        const project = await makeProject();
        const P = T0 + 1_500;
        await store.scheduleInsert({ schedule: schedule(project, 'sch_p', { cron: '* * * * * *', nextRunAt: T0 + 3_000 }), maxPerProject: 10 });
        await store.scheduleInsert({ schedule: schedule(project, 'sch_other', { cron: '* * * * * *', nextRunAt: T0 + 7_000 }), maxPerProject: 10 });
        await fire(project, 'job_before', 'sch_p', T0 + 1_000);
        await fire(project, 'job_claimed', 'sch_p', T0 + 2_000);
        await fire(project, 'job_started', 'sch_p', T0 + 3_000);
        await fire(project, 'job_queued', 'sch_p', T0 + 6_000);
        await create(project, [job('job_trigger', { runAt: T0 + 6_000, schedule: { id: 'sch_p', fireAt: null } })]);
        await fire(project, 'job_other', 'sch_other', T0 + 6_000);
        // The firing loop holds sch_p; a worker has claimed the jobs due by 3 s and started the last ahead of its instant.
        expect((await store.scheduleClaimDue({ now: T0, dueBy: T0 + 3_000, leaseUntil: T0 + 60_000, limit: 10 })).map((s) => s.id)).toEqual(['sch_p']);
        const claim = { limit: 10, workerId: 'wrk_a', leaseExtraMs: 30_000, excludeProjectIds: [], heldByProject: {}, claimRule: claimRule(256) };
        expect((await store.jobClaimDue({ ...claim, now: T0, dueBy: T0 + 3_000 })).map((j) => j.id)).toEqual(['job_before', 'job_claimed', 'job_started']);
        const start = (jobId: string, now: number) => store.attemptStart({ jobId, attemptId: `att_${jobId}`, workerId: 'wrk_a', now, leaseExpiresAt: now + 60_000 });
        expect(await start('job_started', T0 + 3_000)).toEqual({ attemptNumber: 1 });

        const settings = { name: null, cron: '* * * * * *', timezone: 'UTC', payload: '{"s":1}', maxRetries: null, catchUp: 'latest' as const, overlap: 'allow' as const };
        const pause = (now: number, name: string | null = null) => store.scheduleUpdate({ projectId: project.id, scheduleId: 'sch_p', settings: { ...settings, name, paused: true }, nextRunAt: T0 + 2_000, now });
        expect(await pause(P)).toMatchObject({ paused: true, nextRunAt: T0 + 2_000, updatedAt: P });
        const status = async (jobId: string) => (await store.jobGet({ projectId: project.id, jobId }))?.status;
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_claimed' })).toMatchObject({ status: 'CANCELLED', cancelledAt: P, attemptCount: 0 });
        expect(await status('job_queued')).toBe('CANCELLED');
        // Before the pause, started, a trigger, another schedule's: left be.
        expect([await status('job_before'), await status('job_started'), await status('job_trigger'), await status('job_other')]).toEqual(['DISPATCHED', 'STARTED', 'QUEUED', 'QUEUED']);
        // The worker's claim was withdrawn: its start sends nothing. The job for an instant before the pause goes out.
        expect(await start('job_claimed', T0 + 2_000)).toBeNull();
        expect(await status('job_claimed')).toBe('CANCELLED');
        expect(await start('job_before', T0 + 1_000)).toEqual({ attemptNumber: 1 });
        // The job started ahead: its request leaves at 3 s.
        expect(await store.scheduleStartedAheadUntil({ scheduleId: 'sch_p', firedAfter: P, now: P })).toBe(T0 + 3_000);
        expect(await store.scheduleStartedAheadUntil({ scheduleId: 'sch_p', firedAfter: P, now: T0 + 3_000 })).toBeNull();
        expect(await store.scheduleStartedAheadUntil({ scheduleId: 'sch_p', firedAfter: T0 + 3_000, now: P })).toBeNull();

        // The fire under way when the pause came creates only its instants before the pause, and cannot move the schedule on.
        await fire(project, 'job_late_before', 'sch_p', T0 + 1_200);
        await fire(project, 'job_late_after', 'sch_p', T0 + 4_000);
        expect(await status('job_late_before')).toBe('QUEUED');
        expect(await status('job_late_after')).toBeUndefined();
        expect(await store.scheduleAdvance({ scheduleId: 'sch_p', expectedNextRunAt: T0 + 2_000, nextRunAt: T0 + 5_000, lastRun: null, skipped: 0, now: P })).toBe(false);
        // Changed again while paused, it keeps the instant of its pause.
        await pause(T0 + 5_000, 'renamed');
        await fire(project, 'job_still_after', 'sch_p', T0 + 1_600);
        expect(await status('job_still_after')).toBeUndefined();
        // Nor is it claimed while paused.
        expect(await store.scheduleClaimDue({ now: T0 + 8_000, dueBy: T0 + 10_000, leaseUntil: T0 + 70_000, limit: 10 })).toMatchObject([{ id: 'sch_other' }]);

        // Resumed: the instants its pause took back can have a job again; the claim the pause cut short is let go.
        const resumed = await store.scheduleUpdate({ projectId: project.id, scheduleId: 'sch_p', settings: { ...settings, paused: false }, nextRunAt: T0 + 2_000, now: T0 + 8_000 });
        expect(resumed).toMatchObject({ paused: false, nextRunAt: T0 + 2_000 });
        await fire(project, 'job_again', 'sch_p', T0 + 2_000);
        await fire(project, 'job_after_resume', 'sch_p', T0 + 4_000);
        expect([await status('job_again'), await status('job_after_resume')]).toEqual(['QUEUED', 'QUEUED']);
        expect((await store.scheduleClaimDue({ now: T0 + 8_000, dueBy: T0 + 10_000, leaseUntil: T0 + 70_000, limit: 10 })).map((s) => s.id)).toEqual(['sch_p']);
        expect(await store.scheduleAdvance({ scheduleId: 'sch_p', expectedNextRunAt: T0 + 2_000, nextRunAt: T0 + 9_000, lastRun: null, skipped: 0, now: T0 + 8_000 })).toBe(true);
      });

      it('deletes a schedule and cancels its jobs still QUEUED, not those of other schedules', async () => {
        const project = await makeProject();
        await store.scheduleInsert({ schedule: schedule(project, 'sch_d'), maxPerProject: 10 });
        await store.scheduleInsert({ schedule: schedule(project, 'sch_keep'), maxPerProject: 10 });
        await fire(project, 'job_d1', 'sch_d', T0 + MINUTE);
        await fire(project, 'job_k1', 'sch_keep', T0 + MINUTE);
        expect(await store.scheduleDelete({ projectId: 'prj_other', scheduleId: 'sch_d', now: T0 + 1 })).toBeNull();
        expect(await store.scheduleDelete({ projectId: project.id, scheduleId: 'sch_d', now: T0 + 1 })).toMatchObject({ id: 'sch_d' });
        expect(await store.scheduleGet({ projectId: project.id, scheduleId: 'sch_d' })).toBeNull();
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_d1' })).toMatchObject({ status: 'CANCELLED', cancelledAt: T0 + 1 });
        expect(await store.jobGet({ projectId: project.id, jobId: 'job_k1' })).toMatchObject({ status: 'QUEUED' });
      });
    });

    describe('users, memberships and sessions', () => {
      const user = (id: string, email: string, isOperator = false) => ({
        id,
        email,
        passwordHash: `scrypt$hash-of-${id}`,
        isOperator,
        createdAt: T0,
        updatedAt: T0,
      });

      it('keeps one user per email, and finds users by id and by email', async () => {
        expect(await store.userCount()).toBe(0);
        expect(await store.userInsert(user('usr_a', 'ann@example.com', true))).toBe(true);
        expect(await store.userInsert(user('usr_b', 'ann@example.com'))).toBe(false);
        expect(await store.userCount()).toBe(1);
        expect(await store.userGet('usr_a')).toEqual({ id: 'usr_a', email: 'ann@example.com', isOperator: true, createdAt: T0, updatedAt: T0 });
        expect(await store.userGet('usr_b')).toBeNull();
        expect(await store.userGetByEmail('ANN@example.com')).toMatchObject({ id: 'usr_a', passwordHash: 'scrypt$hash-of-usr_a' });
        expect(await store.userGetByEmail('bob@example.com')).toBeNull();
        expect(await store.userList()).toEqual([await store.userGet('usr_a')]);
        expect(await store.userUpdatePassword({ userId: 'usr_a', passwordHash: 'scrypt$new', now: T0 + 5 })).toBe(true);
        expect(await store.userUpdatePassword({ userId: 'usr_none', passwordHash: 'scrypt$new', now: T0 + 5 })).toBe(false);
        expect(await store.userGetPasswordHash('usr_a')).toBe('scrypt$new');
        expect(await store.userGet('usr_a')).toMatchObject({ updatedAt: T0 + 5 });
      });

      it('lists the teams a user belongs to, and every team', async () => {
        const p1 = await makeProject();
        const p2 = await makeProject();
        await store.userInsert(user('usr_m', 'm@example.com'));
        expect(await store.teamListByUser('usr_m')).toEqual([]);
        await store.teamMembershipInsert({ userId: 'usr_m', teamId: p2.teamId, now: T0 });
        await store.teamMembershipInsert({ userId: 'usr_m', teamId: p2.teamId, now: T0 + 1 });
        expect((await store.teamListByUser('usr_m')).map((t) => t.id)).toEqual([p2.teamId]);
        const all = (await store.teamList()).map((t) => t.id);
        expect(all).toEqual(expect.arrayContaining([p1.teamId, p2.teamId]));
      });

      it('finds a session with its user until it expires, and deletes sessions one by one, by user and when expired', async () => {
        await store.userInsert(user('usr_s', 's@example.com', true));
        await store.userInsert(user('usr_t', 't@example.com'));
        const session = (n: number, userId: string, expiresAt: number) => ({
          tokenHash: Buffer.alloc(32, n),
          userId,
          csrfToken: `csrf-${n}`,
          createdAt: T0,
          expiresAt,
        });
        await store.sessionInsert(session(1, 'usr_s', T0 + 1_000));
        await store.sessionInsert(session(2, 'usr_s', T0 + 1_000));
        await store.sessionInsert(session(3, 'usr_s', T0 + 1_000));
        await store.sessionInsert(session(4, 'usr_t', T0 + 10));
        const found = await store.sessionGet({ tokenHash: Buffer.alloc(32, 1), now: T0 });
        expect(found).toEqual({
          session: session(1, 'usr_s', T0 + 1_000),
          user: { id: 'usr_s', email: 's@example.com', isOperator: true, createdAt: T0, updatedAt: T0 },
        });
        expect(await store.sessionGet({ tokenHash: Buffer.alloc(32, 4), now: T0 + 10 })).toBeNull();
        expect(await store.sessionGet({ tokenHash: Buffer.alloc(32, 9), now: T0 })).toBeNull();
        await store.sessionDelete(Buffer.alloc(32, 1));
        expect(await store.sessionGet({ tokenHash: Buffer.alloc(32, 1), now: T0 })).toBeNull();
        await store.sessionDeleteByUser({ userId: 'usr_s', keepTokenHash: Buffer.alloc(32, 2) });
        expect(await store.sessionGet({ tokenHash: Buffer.alloc(32, 2), now: T0 })).not.toBeNull();
        expect(await store.sessionGet({ tokenHash: Buffer.alloc(32, 3), now: T0 })).toBeNull();
        expect(await store.sessionDeleteExpired(T0 + 10)).toBe(1);
        await store.sessionDeleteByUser({ userId: 'usr_s', keepTokenHash: null });
        expect(await store.sessionGet({ tokenHash: Buffer.alloc(32, 2), now: T0 })).toBeNull();
      });
    });
  });
}
