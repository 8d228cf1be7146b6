import type { ProjectRow } from '../store/store.js';
import type { CapacitySettings } from './capacity-rules.js';

/** Projects whose settings are kept, and whose changes are numbered; the oldest is forgotten past this. */
const KNOWN_PROJECTS_MAX = 1_000;

/**
 * The capacity settings of projects a worker has seen lately, kept after it holds nothing of them
 * (a claim may start their due jobs at once: Capacity.reserveClaimStarts), and the changes made
 * through this instance, numbered, so that a load begun before a change does not undo it. Bounded.
 */
export class KnownSettings {
  private readonly known = new Map<string, CapacitySettings>();
  private changes = 0;
  private readonly changedAt = new Map<string, number>();

  /** How many changes were made here so far: taken before a load of projects, for `learn`. */
  get changesMade(): number {
    return this.changes;
  }

  /**
   * The project's settings were loaded, by a load begun when `readAfter` changes had been made:
   * taken unless a change made here since may be newer (returns whether they were taken).
   */
  learn(project: ProjectRow, readAfter: number): boolean {
    if ((this.changedAt.get(project.id) ?? -1) >= readAfter) return false;
    this.known.delete(project.id);
    this.known.set(project.id, project);
    if (this.known.size > KNOWN_PROJECTS_MAX) this.known.delete(this.known.keys().next().value!);
    return true;
  }

  /** The project's settings were changed here (only the change's number is kept for a project not known). */
  changed(project: ProjectRow): void {
    this.changedAt.delete(project.id);
    this.changedAt.set(project.id, this.changes++);
    if (this.changedAt.size > KNOWN_PROJECTS_MAX) this.changedAt.delete(this.changedAt.keys().next().value!);
    if (this.known.has(project.id)) this.known.set(project.id, project);
  }

  get(projectId: string): CapacitySettings | undefined {
    return this.known.get(projectId);
  }

  entries(): IterableIterator<[string, CapacitySettings]> {
    return this.known.entries();
  }
}
