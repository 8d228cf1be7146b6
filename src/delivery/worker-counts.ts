import type { CapacitySettings } from './capacity-rules.js';

/** What one worker holds of a project. */
export interface ProjectCount {
  /** Claimed (or about to be claimed started) and not yet started. */
  held: number;
  /**
   * Room taken for jobs being created started (reserveStartAtEnqueue), not yet handed over: it
   * counts against the slots as a running attempt does, but no job waits behind it, so it does not
   * stop another enqueue from starting its jobs beside it.
   */
  reserved: number;
  /** Started and not yet answered. */
  running: number;
  /** The project's settings as last loaded; null until then (its room is then only the global one). */
  settings: CapacitySettings | null;
}

/**
 * The bookkeeping under Capacity: each project's counts and the worker's totals, moved together so
 * that a total is always the sum of its projects' counts. No rule lives here (capacity.ts).
 */
export class WorkerCounts {
  private readonly projects = new Map<string, ProjectCount>();
  private heldSum = 0;
  private reservedSum = 0;
  private runningSum = 0;

  /** Jobs held, room reserved and attempts running, all projects together. */
  get total(): number {
    return this.heldSum + this.reservedSum + this.runningSum;
  }

  get running(): number {
    return this.runningSum;
  }

  /** The project's counts, made (all zero) if it has none. */
  of(projectId: string): ProjectCount {
    let count = this.projects.get(projectId);
    if (!count) this.projects.set(projectId, (count = { held: 0, reserved: 0, running: 0, settings: null }));
    return count;
  }

  /** The project's counts, if it has any. */
  find(projectId: string): ProjectCount | undefined {
    return this.projects.get(projectId);
  }

  entries(): IterableIterator<[string, ProjectCount]> {
    return this.projects.entries();
  }

  forget(projectId: string): void {
    this.projects.delete(projectId);
  }

  /** `n` more jobs of the project are held (n < 0: given back). */
  hold(projectId: string, n: number): void {
    this.of(projectId).held += n;
    this.heldSum += n;
  }

  /** `n` more of room reserved for the project's jobs being created started (n < 0: given back). */
  reserve(projectId: string, n: number): void {
    this.of(projectId).reserved += n;
    this.reservedSum += n;
  }

  /** `n` more of the project's attempts run (n < 0: answered). */
  run(projectId: string, n: number): void {
    this.of(projectId).running += n;
    this.runningSum += n;
  }

  /** Shutdown: every held job is given back at once. */
  releaseAllHeld(): void {
    for (const count of this.projects.values()) count.held = 0;
    this.heldSum = 0;
  }
}
