import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../../src/errors.js';
import { GroupCommit, type WalSync } from '../../../src/store/sqlite/group-commit.js';
import { makeTempDir } from '../../support/temp-dir.js';

/**
 * GroupCommit acknowledges a write only once its commit is durable: with a WAL sync, the write's
 * promise waits for that sync, and groups committed while it runs share the next one. Here the
 * sync is the test's own, finishing when the test says; SqliteStore's is an fdatasync of the WAL.
 */
describe('group commit with the WAL sync off the event loop', () => {
  let dir: ReturnType<typeof makeTempDir>;
  let db: Database.Database;
  let reader: Database.Database;
  let syncs: ((error: Error | null) => void)[];
  let writer: GroupCommit;

  beforeEach(() => {
    dir = makeTempDir();
    const path = join(dir.path, 'group.db');
    db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE t (n INTEGER)');
    reader = new Database(path, { readonly: true });
    syncs = [];
    const sync: WalSync = (done) => syncs.push(done);
    writer = new GroupCommit(db, sync);
  });
  afterEach(() => {
    reader.close();
    db.close();
    dir.remove();
  });

  const insert = (n: number) => writer.run(() => db.prepare('INSERT INTO t (n) VALUES (?)').run(n).changes);
  const count = () => (reader.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
  const settledYet = (promise: Promise<unknown>) => Promise.race([promise.then(() => true, () => true), nextTurn().then(() => false)]);

  it('commits at once but acknowledges only after the sync, and later groups share the next sync', async () => {
    const first = insert(1);
    await nextTurn();
    expect(count()).toBe(1);
    expect(syncs).toHaveLength(1);
    expect(await settledYet(first)).toBe(false);

    // Two more groups commit while the first sync runs: they wait for one sync between them.
    const second = insert(2);
    await nextTurn();
    const third = insert(3);
    await nextTurn();
    expect(count()).toBe(3);
    expect(syncs).toHaveLength(1);

    syncs[0]!(null);
    expect(await first).toBe(1);
    expect(await settledYet(second)).toBe(false);
    expect(syncs).toHaveLength(2);
    syncs[1]!(null);
    expect(await Promise.all([second, third])).toEqual([1, 1]);
  });

  it('refuses writes whose sync failed as UNAVAILABLE, and reports the disk as failing', async () => {
    const write = insert(1);
    await nextTurn();
    syncs[0]!(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    await expect(write).rejects.toBeInstanceOf(UnavailableError);
    expect(writer.failing).toBe(true);
    const next = insert(2);
    await nextTurn();
    syncs[1]!(null);
    await next;
    expect(writer.failing).toBe(false);
  });

  it("tells its hooks which writes were kept, and commits what beforeCommit writes with the group, or fails the group with it", async () => {
    const kept: boolean[] = [];
    let rolledBack = 0;
    let extra: number | null = 700;
    const hooked = new GroupCommit(db, null, {
      afterWrite: (ok) => kept.push(ok),
      rolledBack: () => rolledBack++,
      beforeCommit: () => {
        if (extra === null) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
        db.prepare('INSERT INTO t (n) VALUES (?)').run(extra);
      },
    });
    const writes = [
      hooked.run(() => db.prepare('INSERT INTO t (n) VALUES (1)').run().changes),
      hooked.run(() => {
        db.prepare('INSERT INTO t (n) VALUES (2)').run();
        throw new Error('this write fails alone');
      }),
    ];
    const outcomes = await Promise.allSettled(writes);
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected']);
    // Run together first; the throw undid the group, which ran again one savepoint a write.
    expect(rolledBack).toBe(1);
    expect(kept).toEqual([true, false]);
    expect((reader.prepare('SELECT n FROM t ORDER BY n').all() as { n: number }[]).map((r) => r.n)).toEqual([1, 700]);
    // A group whose writes all succeed runs once, together.
    kept.length = 0;
    extra = 800;
    expect(await Promise.all([4, 5].map((n) => hooked.run(() => db.prepare('INSERT INTO t (n) VALUES (?)').run(n).changes)))).toEqual([1, 1]);
    expect(rolledBack).toBe(1);
    expect(kept).toEqual([true, true]);
    db.prepare('DELETE FROM t WHERE n IN (4, 5, 800)').run();
    extra = null;
    await expect(hooked.run(() => db.prepare('INSERT INTO t (n) VALUES (3)').run().changes)).rejects.toBeInstanceOf(UnavailableError);
    expect(count()).toBe(2);
  });

  it('settle() waits until every committed group is on disk', async () => {
    const write = insert(1);
    let settled = false;
    const closing = writer.settle().then(() => (settled = true));
    await nextTurn();
    expect(settled).toBe(false);
    syncs[0]!(null);
    await closing;
    expect(await write).toBe(1);
  });
});
