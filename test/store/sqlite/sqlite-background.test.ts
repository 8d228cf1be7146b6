import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_DEFAULTS } from '../../../src/services/project-settings.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import type { ProjectRow } from '../../../src/store/store.js';
import { eventually } from '../../support/eventually.js';
import { makeTempDir } from '../../support/temp-dir.js';

/**
 * The embedded store's background connection: WAL checkpoints and counts over every job run in a
 * worker thread, and the writer no longer checkpoints inside its commits; the writer keeps the WAL
 * under its bound under a steady stream of writes.
 */
describe('sqlite background connection', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const dir = makeTempDir();
  const path = join(dir.path, 'background.db');
  let store: SqliteStore;
  const project: ProjectRow = { id: 'prj_bg', teamId: 'team_bg', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };

  beforeAll(async () => {
    store = new SqliteStore({ path });
    await store.migrate();
    await store.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
    await store.projectInsert({ project, secret: { id: 'whs_1', projectId: project.id, ciphertext: 'sealed-1', createdAt: T0, expiresAt: null } });
  });
  afterAll(async () => {
    await store.close();
    dir.remove();
  });

  const insert = (from: number, count: number) =>
    store.jobCreate({
      projectId: project.id,
      teamId: project.teamId,
      now: T0,
      jobs: Array.from({ length: count }, (_, i) => ({ id: `job_bg${String(from + i).padStart(8, '0')}`, payload: `{"pad":"${'x'.repeat(500)}"}`, scheduledFor: null, runAt: T0 + 60_000, maxRetries: 3 })),
      quota: null,
      idempotency: null,
      answer: { kind: 'single', statusCode: 201, body: '{}' },
    });

  it('moves committed pages into the database file on its own, below the size at which SQLite would checkpoint in a commit', async () => {
    const before = statSync(path).size;
    // Fewer than the 1,000 WAL pages at which SQLite would checkpoint inside a commit (with the
    // background connection stopped, the file stays at its first page): only the background
    // connection can have moved them.
    for (let i = 0; i < 6; i++) await insert(i * 500, 500);
    const deadline = Date.now() + 10_000;
    while (statSync(path).size < before + 1_000_000) {
      if (Date.now() > deadline) throw new Error(`the database file stayed at ${statSync(path).size} bytes: nothing checkpointed`);
      await new Promise((r) => setTimeout(r, 50));
    }
  });

  it('counts jobs by status on the background connection, seeing the last commit', async () => {
    await insert(10_000, 3);
    const counts = await store.jobCountByStatus();
    expect(counts.QUEUED).toBe(3_003);
    expect(counts.COMPLETED).toBe(0);
  });
});

describe('sqlite WAL bound', () => {
  const T0 = Date.parse('2027-03-10T12:00:00.000Z');
  const LIMIT = 1024 * 1024;

  /** `batches` creations of 40 jobs of about 1 KB, eight in flight at any time; returns the largest WAL seen. */
  async function writeOverlapping(store: SqliteStore, project: ProjectRow, path: string, batches: number): Promise<number> {
    const inFlight: Promise<unknown>[] = [];
    let largest = 0;
    for (let i = 0; i < batches; i++) {
      inFlight.push(
        store.jobCreate({
          projectId: project.id,
          teamId: project.teamId,
          now: T0,
          jobs: Array.from({ length: 40 }, (_, j) => ({ id: `job_w${String(i * 40 + j).padStart(8, '0')}`, payload: `{"pad":"${'y'.repeat(1000)}"}`, scheduledFor: null, runAt: T0 + 60_000, maxRetries: 3 })),
          quota: null,
          idempotency: null,
          answer: { kind: 'single', statusCode: 201, body: '{}' },
        }),
      );
      if (inFlight.length >= 8) await inFlight.shift();
      largest = Math.max(largest, statSync(`${path}-wal`).size);
    }
    await Promise.all(inFlight);
    return largest;
  }

  it('keeps the WAL near its bound while writes never stop, and at most at it once they do', async () => {
    const dir = makeTempDir();
    const path = join(dir.path, 'wal.db');
    const store = new SqliteStore({ path, walLimitBytes: LIMIT });
    try {
      await store.migrate();
      const project: ProjectRow = { id: 'prj_wal', teamId: 'team_wal', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };
      await store.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
      await store.projectInsert({ project, secret: { id: 'whs_w', projectId: project.id, ciphertext: 'sealed', createdAt: T0, expiresAt: null } });
      const walSize = () => statSync(`${path}-wal`).size;
      // About 20 MB of jobs, in writes that always overlap: the background connection's
      // checkpoints alone never let SQLite start the WAL over, so without the bound it would hold them all.
      const largest = await writeOverlapping(store, project, path, 400);
      // Checked after each batch, so it can pass the bound by what one batch writes (up to eight
      // creations of 40 jobs here).
      expect(largest).toBeLessThan(4 * LIMIT);
      // Once a write finds the WAL copied, it starts it over and cuts the file back to the bound.
      const deadline = Date.now() + 10_000;
      while (walSize() > LIMIT) {
        if (Date.now() > deadline) throw new Error(`the WAL stayed at ${walSize()} bytes`);
        await store.settingInsertIfAbsent(`poke_${Date.now()}`, 'x');
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      await store.close();
      dir.remove();
    }
  });

  it('empties the WAL once writing has stopped', async () => {
    const dir = makeTempDir();
    const path = join(dir.path, 'settle.db');
    const store = new SqliteStore({ path });
    try {
      await store.migrate();
      const project: ProjectRow = { id: 'prj_settle', teamId: 'team_settle', name: 'P', webhookUrl: 'http://127.0.0.1:1/a', ...PROJECT_DEFAULTS, createdAt: T0 };
      await store.teamInsert({ id: project.teamId, name: 'T', plan: 'unlimited', createdAt: T0 });
      await store.projectInsert({ project, secret: { id: 'whs_s', projectId: project.id, ciphertext: 'sealed', createdAt: T0, expiresAt: null } });
      // About 12 MB of jobs, in overlapping writes, leaves a WAL well past the 4 MB the quiet check looks for.
      expect(await writeOverlapping(store, project, path, 250)).toBeGreaterThan(4 * 1024 * 1024);
      await eventually(() => statSync(`${path}-wal`).size, { what: 'the WAL emptied once writes stopped', until: (size) => size === 0, withinMs: 15_000, everyMs: 100 });
      // Nothing was lost on the way: every job is there.
      expect((await store.jobCountByStatus()).QUEUED).toBe(10_000);
    } finally {
      await store.close();
      dir.remove();
    }
  });
});
