/**
 * The capacity model's rules, each written once: how many jobs a worker may hold and whether an
 * attempt may start. Capacity (capacity.ts) applies them to a worker's counts; the stores' claim
 * takes their numbers as parameters (`claimRule`), and the embedded store's claim applies two of
 * them in SQL (claimLimit, and a project's slots less what it holds for the jobs it starts at once)
 * to the project's row as it is now: the store contract proves each agrees with these. Pure.
 *
 * The rules of numbers (SPEC sections 3, 10 and 11; the holds and the order rule, which depend on
 * what a worker holds, are Capacity's):
 * - **Global slots**: a worker holds (claimed or running) at most PUNCTUAL_DELIVERY_CONCURRENCY jobs.
 * - **A project's slots**: at most its deliveryConcurrency attempts run at once, and never more
 *   than its share of the global slots (half), so that one project pointed at a receiver that never
 *   answers leaves the other projects room (docs/guarantees.md section 9).
 * - **Claim-ahead**: a worker holds up to CLAIM_AHEAD_FACTOR times a project's slots (within its
 *   share), so that when a slot frees the next job is already here; for a rated project no more
 *   than a tenth of a second's worth. The rest wait QUEUED, cancellable.
 * - **Leases**: a claim or an attempt is leased for the project's timeout plus LEASE_MARGIN_MS.
 */
import type { ProjectRow } from '../store/store.js';

/** A worker holds up to this many times a project's slots (within its share of the global slots). */
export const CLAIM_AHEAD_FACTOR = 2;
/** A rated project's jobs held at once: this fraction of a second's worth (at least one). */
const RATE_WINDOWS_PER_SECOND = 10;
/** A lease covers the per-attempt timeout plus this margin, so a live but slow delivery is never rescued mid-flight. */
export const LEASE_MARGIN_MS = 30_000;

/** What a project's settings say of its capacity. */
export type CapacitySettings = Pick<ProjectRow, 'deliveryConcurrency' | 'deliveryRatePerSecond' | 'holdOnFailure'>;

/** How long a claim or an attempt of the project is leased for. */
export const leaseMs = (project: Pick<ProjectRow, 'deliveryTimeoutMs'>): number => project.deliveryTimeoutMs + LEASE_MARGIN_MS;

/** The most slots one project may use of a worker's `globalSlots`. */
export const projectShare = (globalSlots: number): number => Math.max(1, Math.floor(globalSlots / 2));

/** Attempts of the project that may run at once in one worker. */
export const projectSlots = (project: CapacitySettings, globalSlots: number): number =>
  Math.min(project.deliveryConcurrency, projectShare(globalSlots));

/** Jobs of the project one worker may hold at once, claimed or running. */
export function claimLimit(project: CapacitySettings, globalSlots: number): number {
  const ahead = Math.min(CLAIM_AHEAD_FACTOR * projectSlots(project, globalSlots), projectShare(globalSlots));
  if (project.deliveryRatePerSecond === null) return ahead;
  return Math.min(ahead, Math.max(1, Math.ceil(project.deliveryRatePerSecond / RATE_WINDOWS_PER_SECOND)));
}

/**
 * claimLimit's numbers, for a store's claim to apply the same rule in SQL to projects the worker
 * has not loaded. The store contract proves the two agree.
 */
export interface ClaimRule {
  aheadFactor: number;
  share: number;
  rateWindowsPerSecond: number;
}

export const claimRule = (globalSlots: number): ClaimRule => ({
  aheadFactor: CLAIM_AHEAD_FACTOR,
  share: projectShare(globalSlots),
  rateWindowsPerSecond: RATE_WINDOWS_PER_SECOND,
});
