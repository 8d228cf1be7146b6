import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../../src/errors.js';
import { GroupCommit, type WalSync } from '../../../src/store/sqlite/group-commit.js';
import { makeTempDir } from '../../support/temp-dir.js';

/**
 * GroupCommit acknowledges a write only once its commit is durable: after COMMIT it runs the WAL
 * sync, and the group's promises settle only after the sync returned. Here the sync is the test's
 * own, which looks at what is committed and settled when it runs, and fails when the test says;
 * SqliteStore's is an fdatasync of the WAL.
 */
describe('group commit with a WAL sync after each COMMIT', () => {
  let dir: ReturnType<typeof makeTempDir>;
  let db: Database.Database;
  let reader: Database.Database;
  /** What the sync saw each time it ran: the committed rows, and whether the writes were settled yet. */
  let syncs: { committed: number; settled: boolean[] }[];
  let failNextSync: boolean;
  let settled: boolean[];
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
    settled = [];
    const sync: WalSync = () => {
      syncs.push({ committed: count(), settled: [...settled] });
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

  const insert = (n: number) => {
    const write = writer.run(() => db.prepare('INSERT INTO t (n) VALUES (?)').run(n).changes);
    const at = settled.push(false) - 1;
    const done = () => {
      settled[at] = true;
    };
    write.then(done, done);
    return write;
  };
  const count = () => (reader.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;

  it('syncs after each COMMIT and acknowledges a group only after its sync', async () => {
    const first = insert(1);
    const second = insert(2);
    expect(syncs).toHaveLength(0);
    expect(await Promise.all([first, second])).toEqual([1, 1]);
    // One group, one sync: its rows committed, neither write settled when it ran.
    expect(syncs).toEqual([{ committed: 2, settled: [false, false] }]);
    const third = insert(3);
    expect(await third).toBe(1);
    expect(syncs[1]).toEqual({ committed: 3, settled: [true, true, false] });
  });

  it('refuses writes whose sync failed as UNAVAILABLE, and reports the disk as failing', async () => {
    failNextSync = true;
    await expect(insert(1)).rejects.toBeInstanceOf(UnavailableError);
    expect(writer.failing).toBe(true);
    // Committed, though not known to be on disk: the next group's sync covers it.
    expect(await insert(2)).toBe(1);
    expect(writer.failing).toBe(false);
    expect(syncs.map((s) => s.committed)).toEqual([1, 2]);
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
    expect(syncs).toHaveLength(0);
    writer.flush();
    expect(syncs).toEqual([{ committed: 1, settled: [false] }]);
    expect(await write).toBe(1);
  });
});
