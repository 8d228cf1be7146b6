/**
 * Delivery attempts in the embedded store (../attempt-store.ts): reads on the reader connection,
 * writes on the writer thread (attempt-writes.ts).
 */
import type { AttemptAcceptParams, AttemptFinishParams, AttemptReport, AttemptRow, AttemptStartParams, AttemptStore, AttemptWithJob } from '../attempt-store.js';
import type { JobRow } from '../job-store.js';
import * as attemptWrites from './attempt-writes.js';
import type { CachedReads } from './cached-reads.js';
import { AttemptGetOfJob, AttemptListByJob } from './queries/attempts.js';
import { JobGetById } from './queries/jobs.js';
import type { Sql } from './sql.js';
import type { SqliteWriter } from './writer.js';

export class SqliteAttempts implements AttemptStore {
  constructor(
    private readonly sql: Sql,
    private readonly writer: SqliteWriter,
    private readonly cached: CachedReads,
  ) {}

  async attemptListByJob(jobId: string): Promise<AttemptRow[]> {
    return this.sql(AttemptListByJob).all(jobId) as AttemptRow[];
  }

  attemptStart(params: AttemptStartParams): Promise<{ attemptNumber: number } | null> {
    return this.writer.run(attemptWrites.attemptStart, params);
  }

  attemptFinish(params: AttemptFinishParams): Promise<boolean> {
    return this.writer.run(attemptWrites.attemptFinish, params);
  }

  attemptAccept(params: AttemptAcceptParams): Promise<boolean> {
    return this.writer.run(attemptWrites.attemptAccept, params);
  }

  async attemptGetWithJob(params: { jobId: string; attemptId: string }): Promise<AttemptWithJob | null> {
    const attempt = this.sql(AttemptGetOfJob).get(params) as AttemptRow | undefined;
    const job = attempt && (this.sql(JobGetById).get(params.jobId) as JobRow | undefined);
    const project = job && this.cached.project(job.projectId);
    return attempt && job && project ? { job, project, attempt } : null;
  }

  attemptReport(params: { jobId: string; attemptId: string; now: number; report: AttemptReport }): Promise<boolean> {
    return this.writer.run(attemptWrites.attemptReport, params);
  }
}
