/**
 * Pause and resume (SPEC section 10) on the jobs: a paused project's QUEUED jobs are held (out of
 * the index claims read), a resumed project's released, in batches so that a project with a
 * million waiting jobs never holds the store's writer for long. The paused flag itself is what
 * keeps a paused project's jobs from being delivered (claims and starts check it); holding only
 * keeps them from costing every claim a walk over them.
 */
import type { Store } from '../store/store.js';

const BATCH = 1_000;

/** Holds every QUEUED job of a paused project; stops early, harmlessly, if it is resumed meanwhile. */
export async function holdProjectJobs(store: Store, projectId: string): Promise<void> {
  for (let afterSeq: number | null = 0; afterSeq !== null; ) {
    afterSeq = (await store.jobHoldBatch({ projectId, afterSeq, limit: BATCH })).nextAfterSeq;
  }
}

/** Releases a resumed project's held jobs, earliest due first; `onReleased` wakes the claim loop after each batch. */
export async function releaseProjectJobs(store: Store, projectId: string, onReleased: () => void): Promise<number> {
  let total = 0;
  for (;;) {
    const released = await store.jobReleaseHeldBatch({ projectId, limit: BATCH });
    total += released;
    if (released > 0) onReleased();
    if (released < BATCH) return total;
  }
}

/**
 * A project's paused flag changed: paused, its waiting jobs leave the claims' index; resumed, they
 * come back, earliest due first, and are due now (`onDue` after each batch and once at the end).
 * Either is done before the change is answered, batch by batch.
 */
export async function followPause(store: Store, projectId: string, change: { wasPaused: boolean; paused: boolean }, onDue: () => void): Promise<void> {
  if (!change.wasPaused && change.paused) await holdProjectJobs(store, projectId);
  if (change.wasPaused && !change.paused) {
    await releaseProjectJobs(store, projectId, onDue);
    onDue();
  }
}

/** Releases the jobs of every project resumed by a process that stopped before it was done. */
export async function releaseResumedProjects(store: Store, onReleased: () => void): Promise<void> {
  for (const projectId of await store.projectListWithHeldJobs()) await releaseProjectJobs(store, projectId, onReleased);
}
