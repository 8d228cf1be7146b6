import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../../src/errors.js';
import { GroupCommit, type WalSync } from '../../../src/store/sqlite/group-commit.js';
import { makeTempDir } from '../../support/temp-dir.js';

/**
 * GroupCommit acknowledges a write only once its commit is durable: after COMMIT it runs the WAL
 * sync, and the group's promises settle only after the sync returned. Here the sync is the test's
 * own, which records what was committed when it ran and fails when the test says; SqliteStore's is
 * an fdatasync of the WAL. That nothing is answered before the sync returns is shown by a failing
 * sync: a write answered before it would have resolved.
 */
describe('group commit with a WAL sync after each COMMIT', () => {
  let dir: ReturnType<typeof makeTempDir>;
  let db: Database.Database;
  let reader: Database.Database;
  /** The committed row count each time the sync ran. */
  let syncs: number[];
  let failNextSync: boolean;
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
    failNextSync = false;
    const sync: WalSync = () => {
      syncs.push(count());
      if (failNextSync) {
        failNextSync = false;
        throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      }
    };
    writer = new GroupCommit(db, sync);
  });
  afterEach(() => {
    reader.close();
    db.close();
    dir.remove();
  });

  const insert = (n: number) => writer.run(() => db.prepare('INSERT INTO t (n) VALUES (?)').run(n).changes);
  const count = () => (reader.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;

  it('commits the writes of a turn together, then syncs once, then answers them', async () => {
    const first = insert(1);
    const second = insert(2);
    expect(syncs).toEqual([]);
    expect(await Promise.all([first, second])).toEqual([1, 1]);
    // One group, one sync, after its COMMIT.
    expect(syncs).toEqual([2]);
    expect(await insert(3)).toBe(1);
    expect(syncs).toEqual([2, 3]);
  });

  it('refuses the writes whose sync failed, and every write after it, as UNAVAILABLE, and stays failing', async () => {
    failNextSync = true;
    await expect(insert(1)).rejects.toBeInstanceOf(UnavailableError);
    expect(writer.failing).toBe(true);
    // A later sync that succeeds would not prove the first group durable (group-commit.ts): the
    // next writes are refused without running, and nothing more is synced.
    const next = insert(2);
    await expect(next).rejects.toBeInstanceOf(UnavailableError);
    await expect(next).rejects.toThrow(/takes no writes until it is restarted/);
    expect(count()).toBe(1);
    expect(syncs).toEqual([1]);
    expect(writer.failing).toBe(true);
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

  it('flush() commits and syncs what is pending at once (the writer thread closing)', async () => {
    const write = insert(1);
    expect(syncs).toEqual([]);
    writer.flush();
    expect(syncs).toEqual([1]);
    expect(await write).toBe(1);
  });
});
