import { DeliveryMinuteAdd, LatenessMinuteAdd } from './queries/overview.js';
import type { Sql } from './sql.js';

/**
 * The project overview's figures (0011_project_overview.sql) of the attempts one group commit
 * starts and finishes, added up in memory on the writer thread and written just before the group
 * commits, in its transaction: one upsert per project and minute (and lateness bucket) for the
 * group, not one per attempt. bench:e2e lost about a tenth of its deliveries a second with an
 * upsert per attempt, each in the writer thread that every write waits for.
 *
 * A write's figures count only if the write does: they wait apart until GroupCommit says whether
 * its savepoint was kept (endWrite), then join the group's.
 */
export class OverviewTally {
  private writeMinutes: { projectId: string; minute: number; failed: boolean }[] = [];
  private writeStarts: { projectId: string; minute: number; bucket: number }[] = [];
  private readonly minutes = new Map<string, { projectId: string; minute: number; attempts: number; failedAttempts: number }>();
  private readonly starts = new Map<string, { projectId: string; minute: number; bucket: number; attempts: number }>();

  /** An attempt finished (its failed attempt row is written at once: failures are few, and each is a row of its own). */
  finished(projectId: string, minute: number, failed: boolean): void {
    this.writeMinutes.push({ projectId, minute, failed });
  }

  /** A first attempt started, this late (its bucket). */
  started(projectId: string, minute: number, bucket: number): void {
    this.writeStarts.push({ projectId, minute, bucket });
  }

  endWrite(kept: boolean): void {
    if (kept) {
      for (const f of this.writeMinutes) {
        const key = `${f.projectId} ${f.minute}`;
        const row = this.minutes.get(key) ?? { projectId: f.projectId, minute: f.minute, attempts: 0, failedAttempts: 0 };
        row.attempts += 1;
        row.failedAttempts += f.failed ? 1 : 0;
        this.minutes.set(key, row);
      }
      for (const s of this.writeStarts) {
        const key = `${s.projectId} ${s.minute} ${s.bucket}`;
        const row = this.starts.get(key) ?? { ...s, attempts: 0 };
        row.attempts += 1;
        this.starts.set(key, row);
      }
    }
    this.writeMinutes = [];
    this.writeStarts = [];
  }

  /** Inside the group's transaction, before its COMMIT; the tally starts over, whatever follows. */
  write(sql: Sql): void {
    try {
      for (const row of this.minutes.values()) sql(DeliveryMinuteAdd).run(row);
      for (const row of this.starts.values()) sql(LatenessMinuteAdd).run(row);
    } finally {
      this.minutes.clear();
      this.starts.clear();
    }
  }
}
