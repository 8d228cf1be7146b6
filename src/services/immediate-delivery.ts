import type { ProjectRow, StartedJob } from '../store/store.js';

/** Room to start jobs due at once as they are created, and where to hand them once they are. */
export interface ImmediateDelivery {
  /**
   * Room to start up to `wanted` of the project's `dueNow` jobs due at once (those that may be
   * created started, job-rules.ts startableAtCreation), held until `submit` is given the
   * reservation. When fewer may be than are due, the rest wait in the store, and nothing enqueued
   * after them starts before a claim has taken them.
   */
  reserve(project: ProjectRow, wanted: number, dueNow: number): ImmediateReservation | null;
  /** The jobs created with their attempt STARTED under the reservation (none if the creation failed); frees the rest of its room. */
  submit(reservation: ImmediateReservation, jobs: StartedJob[]): void;
}

export interface ImmediateReservation {
  projectId: string;
  workerId: string;
  leaseExpiresAt: number;
  limit: number;
}
