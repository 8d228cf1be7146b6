import { dueOrder, type ClaimedJob, type ProjectRow, type Store } from '../store/store.js';
import type { Capacity } from './capacity.js';

/** A claimed job waiting to start, with what its attempt needs. */
export interface Waiting {
  job: ClaimedJob;
  project: ProjectRow;
  secrets: string[];
}

/**
 * What claimed jobs need to start: their projects and signing secrets, each loaded once. The
 * settings loaded are the capacity model's from then on (Capacity.know), but for a change made here
 * since the load began.
 */
export async function loadWaiting(
  deps: { store: Pick<Store, 'projectGetMany'>; signingSecrets: (projectId: string) => Promise<string[]> },
  capacity: Capacity,
  jobs: ClaimedJob[],
): Promise<Waiting[]> {
  const projectIds = [...new Set(jobs.map((job) => job.projectId))];
  const changesBefore = capacity.changesMade;
  const [projects, secrets] = await Promise.all([deps.store.projectGetMany(projectIds), Promise.all(projectIds.map((id) => deps.signingSecrets(id)))]);
  const byId = new Map(projects.map((project) => [project.id, project]));
  const secretsById = new Map(projectIds.map((id, i) => [id, secrets[i]!]));
  for (const project of projects) capacity.know(project, changesBefore);
  return jobs.map((job) => ({ job, project: byId.get(job.projectId)!, secrets: secretsById.get(job.projectId)! }));
}

/**
 * The jobs a worker holds and has not started: those claimed ahead of their time, by due time,
 * and per project those due, in due order (`dueOrder`), whatever order their claims came in. No
 * timers: the attempt runner asks when the next one is due and takes what is due by then.
 */
export class StartQueue {
  private readonly due = new Map<string, Waiting[]>();
  /** Jobs claimed ahead of their time, by runAt. */
  private readonly ahead = new Map<number, Waiting[]>();
  private dueCount = 0;
  private aheadCount = 0;

  get size(): number {
    return this.dueCount + this.aheadCount;
  }

  /** Adds a job: due at once, or held for its time. Returns whether it waits for its time. */
  add(entry: Waiting, now: number): boolean {
    if (entry.job.runAt > now) {
      const group = this.ahead.get(entry.job.runAt);
      if (group) group.push(entry);
      else this.ahead.set(entry.job.runAt, [entry]);
      this.aheadCount += 1;
      return true;
    }
    this.addDue(entry);
    return false;
  }

  private addDue(entry: Waiting): void {
    const queue = this.due.get(entry.project.id);
    if (!queue) {
      this.due.set(entry.project.id, [entry]);
    } else {
      // Claims come earliest first, so this is nearly always the end.
      let at = queue.length;
      while (at > 0 && dueOrder(queue[at - 1]!.job, entry.job) > 0) at -= 1;
      queue.splice(at, 0, entry);
    }
    this.dueCount += 1;
  }

  /** The earliest time a job held ahead becomes due, or null. */
  nextAheadAt(): number | null {
    let next: number | null = null;
    for (const at of this.ahead.keys()) if (next === null || at < next) next = at;
    return next;
  }

  /** Moves every job held ahead whose time is by `by` to its project's due queue; the projects touched. */
  releaseAhead(by: number): Set<string> {
    const projects = new Set<string>();
    for (const [at, group] of this.ahead) {
      if (at > by) continue;
      this.ahead.delete(at);
      this.aheadCount -= group.length;
      for (const entry of group) {
        this.addDue(entry);
        projects.add(entry.project.id);
      }
    }
    return projects;
  }

  /** The project's next due job, without taking it. */
  peek(projectId: string): Waiting | undefined {
    return this.due.get(projectId)?.[0];
  }

  dueOf(projectId: string): number {
    return this.due.get(projectId)?.length ?? 0;
  }

  take(projectId: string): Waiting | undefined {
    const queue = this.due.get(projectId);
    const next = queue?.shift();
    if (!next) return undefined;
    this.dueCount -= 1;
    if (queue!.length === 0) this.due.delete(projectId);
    return next;
  }

  /** Empties the queue (shutdown, a crash); what it held. */
  clear(): Waiting[] {
    const all = [...[...this.due.values()].flat(), ...[...this.ahead.values()].flat()];
    this.due.clear();
    this.ahead.clear();
    this.dueCount = 0;
    this.aheadCount = 0;
    return all;
  }
}
