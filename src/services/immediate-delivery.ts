import type { ProjectRow, StartedJob } from '../store/store.js';

/** Room to start jobs due at once as they are created, and where to hand them once they are. */
export interface ImmediateDelivery {
  /** Room to start up to `limit` of the project's jobs, held until `submit` is given the reservation. */
  reserve(project: ProjectRow, wanted: number): ImmediateReservation | null;
  /** The jobs created with their attempt STARTED under the reservation (none if the creation failed); frees the rest of its room. */
  submit(reservation: ImmediateReservation, jobs: StartedJob[]): void;
}

export interface ImmediateReservation {
  projectId: string;
  workerId: string;
  leaseExpiresAt: number;
  limit: number;
}
