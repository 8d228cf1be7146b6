/**
 * Delivery attempts in PostgreSQL (../attempt-store.ts): the reads here, the batched starts,
 * finishes and reports in attempt-recorder.ts.
 */
import type { AttemptAcceptParams, AttemptFinishParams, AttemptReport, AttemptRow, AttemptStartParams, AttemptStore, AttemptWithJob } from '../attempt-store.js';
import type { JobRow } from '../job-store.js';
import type { AttemptRecorder } from './attempt-recorder.js';
import type { CachedReads } from './cached-reads.js';
import type { ConnectionPool } from './connection-pool.js';
import { AttemptGetOfJob, AttemptListByJob } from './queries/attempts.js';
import { JobGetById } from './queries/jobs.js';

export class PostgresAttempts implements AttemptStore {
  constructor(
    private readonly db: ConnectionPool,
    private readonly recorder: AttemptRecorder,
    private readonly cached: CachedReads,
  ) {}

  async attemptListByJob(jobId: string): Promise<AttemptRow[]> {
    return this.db.rows<AttemptRow>(AttemptListByJob, [jobId]);
  }

  attemptStart(params: AttemptStartParams): Promise<{ attemptNumber: number } | null> {
    return this.recorder.start(params);
  }

  attemptFinish(params: AttemptFinishParams): Promise<boolean> {
    return this.recorder.finish(params);
  }

  attemptAccept(params: AttemptAcceptParams): Promise<boolean> {
    return this.recorder.accept(params);
  }

  async attemptGetWithJob(params: { jobId: string; attemptId: string }): Promise<AttemptWithJob | null> {
    const [attempt] = await this.db.rows<AttemptRow>(AttemptGetOfJob, [params.jobId, params.attemptId]);
    const [job] = attempt ? await this.db.rows<JobRow>(JobGetById, [params.jobId]) : [];
    const project = job && (await this.cached.projects([job.projectId]))[0];
    return attempt && job && project ? { job, project, attempt } : null;
  }

  attemptReport(params: { jobId: string; attemptId: string; now: number; report: AttemptReport }): Promise<boolean> {
    return this.recorder.report(params);
  }
}
