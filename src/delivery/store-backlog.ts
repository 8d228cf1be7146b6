/**
 * What a worker's last claims may have left due in the store: jobs of the projects they left out
 * (held back or without room) or filled to their room, and of any project while a claim came back
 * full or could not run for want of slots. A job enqueued is not created started ahead of those
 * (Capacity.reserveStartAtEnqueue): it goes to the store and waits its turn, earliest due first.
 *
 * Marks are numbered as they are made. A claim clears only the marks made before it was sent: one
 * made while it ran is for a job created after it in the writer's order, which it did not see.
 */
export class StoreBacklog {
  /** Each project marked, with its mark's number. */
  private readonly projects = new Map<string, number>();
  /** The number of the mark for every project, or null when there is none. */
  private everywhere: number | null = null;
  private marks = 0;

  /** The number the next mark takes: read as a claim is sent, for `claimed`. */
  get nextMark(): number {
    return this.marks;
  }

  /** Whether due jobs of the project may wait in the store. */
  has(projectId: string): boolean {
    return this.everywhere !== null || this.projects.has(projectId);
  }

  /** Due jobs of the project (or, with no project, of any) may wait in the store. */
  add(projectId?: string): void {
    const mark = this.marks++;
    if (projectId === undefined) this.everywhere = mark;
    else this.projects.set(projectId, mark);
  }

  /**
   * A claim is done: `complete` when it took every due job it could (fewer than its limit),
   * `leftBehind` the projects whose due jobs it may have left in the store; `sentAt`, nextMark when
   * it was sent (marks made since stay).
   */
  claimed(complete: boolean, leftBehind: Iterable<string>, sentAt = this.marks): void {
    if (!complete) this.add();
    else {
      if (this.everywhere !== null && this.everywhere < sentAt) this.everywhere = null;
      for (const [projectId, mark] of this.projects) if (mark < sentAt) this.projects.delete(projectId);
    }
    for (const projectId of leftBehind) this.add(projectId);
  }
}
