/**
 * The embedded store's writes of retention (SPEC section 12), each prune a small batch, each a
 * function of its parameters run on the writer thread inside the group's transaction, in its own
 * savepoint (write-registry.ts says how a call reaches it). The store passes the function itself:
 * `writer.run(retentionWrites.jobPruneFinal, params)`.
 */
import type { PrunedJobs } from '../retention-store.js';
import { AttemptDeleteByJob, IdempotencyKeyPrune, JobDeleteBySeq, JobListPrunable, JobTagsDelete, UsagePrune } from './queries/retention.js';
import type { Sql } from './sql.js';

/** One batch of retention (SPEC section 12): the jobs and their attempts in one transaction. */
export function jobPruneFinal(sql: Sql, p: { projectId: string; finalBy: number; limit: number }): PrunedJobs {
  const victims = sql(JobListPrunable).all(p) as { seq: number; id: string; tags: string | null }[];
  let attempts = 0;
  for (const victim of victims) {
    attempts += sql(AttemptDeleteByJob).run(victim.id).changes;
    if (victim.tags !== null) sql(JobTagsDelete).run({ projectId: p.projectId, seq: victim.seq, tags: victim.tags });
    sql(JobDeleteBySeq).run(victim.seq);
  }
  return { jobs: victims.length, attempts };
}

export function idempotencyKeyPrune(sql: Sql, p: { createdBy: number; limit: number }): number {
  return sql(IdempotencyKeyPrune).run(p).changes;
}

export function usagePrune(sql: Sql, p: { beforeDay: string; limit: number }): number {
  return sql(UsagePrune).run(p).changes;
}
