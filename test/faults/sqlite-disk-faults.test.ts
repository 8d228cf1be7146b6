import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectContractError } from '../support/contract-error.js';
import { queryRows } from '../support/job-fixtures.js';
import { makeTestApp, TEST_STORE, type TestApp, type TestProject } from '../support/make-app.js';
import { makeTempDir } from '../support/temp-dir.js';

const TMPFS_SIZE = '8m';

/** Mounts a small tmpfs at `dir`; null (with the reason) where mounting is not permitted. */
function mountTmpfs(dir: string): string | null {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE}`, 'tmpfs', dir], { stdio: 'pipe' });
    return null;
  } catch (error) {
    return ((error as { stderr?: Buffer }).stderr?.toString() || (error as Error).message).trim();
  }
}

/** Fills the file system holding `dir` until it refuses another byte; returns the filler's path. */
function fillDisk(dir: string): string {
  const path = join(dir, 'filler');
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, chunk);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
  // Byte by byte, the last few pages too.
  const last = openSync(path, 'a');
  try {
    for (;;) writeSync(last, Buffer.alloc(512, 1));
  } catch {
    // full
  } finally {
    closeSync(last);
  }
  return path;
}

/** A PASSIVE checkpoint through a connection of its own, as the background connection makes them. */
function checkpoint(dbPath: string): void {
  const db = new Database(dbPath);
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } finally {
    db.close();
  }
}

function integrityCheck(dbPath: string): string {
  const db = new Database(dbPath, { readonly: true });
  try {
    return (db.pragma('integrity_check', { simple: true }) as string) ?? 'no answer';
  } finally {
    db.close();
  }
}

/**
 * SPEC section 5 (UNAVAILABLE: storage unreachable) for the embedded store: its file system fills
 * up or turns read-only under it. Requests answer 503 with Retry-After (never 500), nothing
 * acknowledged is lost, the file stays intact, and service resumes by itself once space or write
 * access is back. Needs root to mount a tmpfs; elsewhere it is skipped with the reason printed.
 */
describe.runIf(TEST_STORE === 'sqlite')('SQLite on a full disk and on a read-only file system', () => {
  const base = makeTempDir();
  const mountPoint = join(base.path, 'tmpfs');
  let mountProblem: string | null = null;
  let t: TestApp;
  let p: TestProject;

  beforeAll(async () => {
    mkdirSync(mountPoint);
    mountProblem = mountTmpfs(mountPoint);
    if (mountProblem) {
      if (process.env.CI) throw new Error(`cannot mount a tmpfs in CI (${mountProblem}): the disk fault tests need root`);
      console.warn(`SKIPPING the disk fault tests: cannot mount a tmpfs (${mountProblem}); they need root.`);
      return;
    }
    t = await makeTestApp({ sqliteDir: mountPoint });
    p = await t.makeProject();
  });
  afterAll(async () => {
    if (!mountProblem) {
      await t?.close();
      // Lazily if something still holds a file there, so a failed test never leaves a mount behind.
      execFileSync('umount', ['-l', mountPoint]);
    }
    base.remove();
  });

  const dispatch = (i: number) => t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { i, pad: 'x'.repeat(4_000) } } });
  const storedIds = async () => (await queryRows<{ id: string }>(t.databaseUrl, 'SELECT id FROM jobs')).map((row) => row.id);

  it('full disk: 503 with Retry-After instead of 500, nothing acknowledged lost, no corruption, recovery once space is back', async (context) => {
    if (mountProblem) return context.skip();
    const acknowledged: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await dispatch(i);
      expect(res.statusCode).toBe(201);
      acknowledged.push(res.json().jobId);
    }
    // The checkpoint the background connection makes every second, made now rather than whenever
    // its timer falls (sooner or later in this test with the machine's load): the WAL is then
    // written again from its start, so after the fill small writes still fit in space SQLite holds.
    checkpoint(t.dbPath);
    const filler = fillDisk(mountPoint);
    try {
      const refused: number[] = [];
      // Small writes may still fit in pages SQLite already holds: keep writing until one is refused.
      for (let i = 0; i < 200 && refused.length < 5; i++) {
        const res = await dispatch(1_000 + i);
        if (res.statusCode === 201) acknowledged.push(res.json().jobId);
        else {
          expectContractError(res, 503, 'UNAVAILABLE');
          expect(res.headers['retry-after']).toBe('1');
          refused.push(res.statusCode);
        }
      }
      expect(refused.length).toBeGreaterThan(0);
      // Reads still work while writes cannot; a load balancer is told to send requests elsewhere,
      // even after a write that changed nothing (a cancel of no job; in `punctual serve`, a claim
      // that finds no due job) committed, and whatever small write the probe of /readyz can fit.
      expect((await t.api(p.key, { method: 'GET', url: `/api/jobs/${acknowledged[0]}` })).statusCode).toBe(200);
      expect((await t.api(p.key, { method: 'DELETE', url: '/api/jobs/job_0000000000000000000000000000' })).statusCode).toBe(404);
      expectContractError(await t.app.inject({ method: 'GET', url: '/readyz' }), 503, 'UNAVAILABLE');
      expectContractError(await t.app.inject({ method: 'GET', url: '/readyz' }), 503, 'UNAVAILABLE');
      expectContractError(await dispatch(2_999), 503, 'UNAVAILABLE');
    } finally {
      // Whatever failed above, the next test starts with space.
      rmSync(filler);
    }
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
    const after = await dispatch(2_000);
    expect(after.statusCode).toBe(201);
    acknowledged.push(after.json().jobId);
    const stored = new Set(await storedIds());
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    expect(integrityCheck(t.dbPath)).toBe('ok');
  });

  it('read-only file system: start refused with an error, no corruption, and service once it is writable again', async (context) => {
    if (mountProblem) return context.skip();
    const before = await dispatch(3_000);
    expect(before.statusCode).toBe(201);
    // A file system cannot turn read-only under open files (the kernel answers "busy"), so this is
    // an instance restarted on a volume mounted read-only by mistake: it must refuse to start rather
    // than serve answers it cannot keep.
    const dbPath = t.dbPath;
    await t.close();
    execFileSync('mount', ['-o', 'remount,ro', mountPoint]);
    let refusal: Error | null = null;
    try {
      const wrongly = await makeTestApp({ sqliteDir: mountPoint });
      await wrongly.close();
    } catch (error) {
      refusal = error as Error;
    } finally {
      execFileSync('mount', ['-o', 'remount,rw', mountPoint]);
    }
    expect(refusal?.message).toMatch(/Cannot open the SQLite database .* for writing .*read-only or full/);
    expect(integrityCheck(dbPath)).toBe('ok');

    t = await makeTestApp({ sqliteDir: mountPoint });
    p = await t.makeProject();
    expect((await dispatch(3_001)).statusCode).toBe(201);
    expect(await storedIds()).toContain(before.json().jobId);
  });
});

/** A loop-mounted ext4 that turns read-only on its first error, as production volumes are set up. */
function mountExt4(image: string, dir: string): string | null {
  try {
    execFileSync('truncate', ['-s', '32M', image]);
    execFileSync('mkfs.ext4', ['-q', image], { stdio: 'pipe' });
    execFileSync('mount', ['-o', 'loop,errors=remount-ro', image, dir], { stdio: 'pipe' });
    return null;
  } catch (error) {
    return ((error as { stderr?: Buffer }).stderr?.toString() || (error as Error).message).trim();
  }
}

/**
 * The file system turning read-only under a running instance: the kernel does that to an ext4
 * volume mounted errors=remount-ro when it meets an error (here triggered through ext4's own
 * sysfs knob, trigger_fs_error). It cannot be undone under open files: the operator checks the
 * volume and restarts. Until then writes answer 503, reads are served and the instance is not ready.
 */
describe.runIf(TEST_STORE === 'sqlite')('SQLite when its file system turns read-only under a running instance', () => {
  const base = makeTempDir();
  const image = join(base.path, 'volume.img');
  const mountPoint = join(base.path, 'ext4');
  let mountProblem: string | null = null;
  let t: TestApp | null = null;

  beforeAll(() => {
    mkdirSync(mountPoint);
    mountProblem = mountExt4(image, mountPoint);
    if (mountProblem) {
      if (process.env.CI) throw new Error(`cannot mount a loop ext4 volume in CI (${mountProblem}): this test needs root`);
      console.warn(`SKIPPING the read-only volume test: cannot mount a loop ext4 volume (${mountProblem}); it needs root.`);
    }
  });
  afterAll(async () => {
    await t?.close().catch(() => {});
    // Already unmounted when the test stopped between its umount and its mount.
    if (!mountProblem) spawnSync('umount', ['-l', mountPoint]);
    base.remove();
  });

  it('answers 503 with Retry-After to writes, serves reads, is not ready, and keeps everything acknowledged', async (context) => {
    if (mountProblem) return context.skip();
    t = await makeTestApp({ sqliteDir: mountPoint });
    const p = await t.makeProject();
    const dbPath = t.dbPath;
    const dispatch = (i: number) => t!.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { i } } });
    const acknowledged: string[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await dispatch(i);
      expect(res.statusCode).toBe(201);
      acknowledged.push(res.json().jobId);
    }

    const device = execFileSync('findmnt', ['-n', '-o', 'SOURCE', mountPoint]).toString().trim();
    writeFileSync(`/sys/fs/ext4/${basename(device)}/trigger_fs_error`, 'punctual fault test');

    const refused = await dispatch(100);
    expectContractError(refused, 503, 'UNAVAILABLE');
    expect(refused.headers['retry-after']).toBe('1');
    const cancel = await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${acknowledged[0]}` });
    expectContractError(cancel, 503, 'UNAVAILABLE');
    expect((await t.api(p.key, { method: 'GET', url: `/api/jobs/${acknowledged[1]}` })).statusCode).toBe(200);
    expectContractError(await t.app.inject({ method: 'GET', url: '/readyz' }), 503, 'UNAVAILABLE');
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);

    // The operator's repair: stop, check the volume, mount it again; the jobs are all there.
    await t.close().catch(() => {});
    t = null;
    execFileSync('umount', [mountPoint]);
    // Exit code 1 is "errors corrected": the forced error left the volume marked as needing a check.
    const check = spawnSync('e2fsck', ['-fy', image], { encoding: 'utf8' });
    expect(check.status, check.stdout + check.stderr).toBeLessThanOrEqual(1);
    execFileSync('mount', ['-o', 'loop,errors=remount-ro', image, mountPoint]);
    expect(integrityCheck(dbPath)).toBe('ok');
    const stored = await queryRows<{ id: string; status: string }>(`sqlite:${dbPath}`, 'SELECT id, status FROM jobs');
    expect(new Set(stored.map((row) => row.id))).toEqual(new Set(acknowledged));
    // The refused cancel changed nothing.
    expect(stored.find((row) => row.id === acknowledged[0])?.status).not.toBe('CANCELLED');
  });
});
