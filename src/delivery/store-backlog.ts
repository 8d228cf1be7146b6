/**
 * What a worker's last claims may have left due in the store: jobs of the projects they left out
 * (held back or without room) or filled to their room, and of any project while a claim came back
 * full or could not run for want of slots. A job enqueued is not created started ahead of those
 * (Capacity.reserveStartAtEnqueue): it goes to the store and waits its turn, earliest due first.
 */
export class StoreBacklog {
  private readonly projects = new Set<string>();
  private everywhere = false;

  /** Whether due jobs of the project may wait in the store. */
  has(projectId: string): boolean {
    return this.everywhere || this.projects.has(projectId);
  }

  /** Due jobs of the project (or, with no project, of any) may wait in the store. */
  add(projectId?: string): void {
    if (projectId === undefined) this.everywhere = true;
    else this.projects.add(projectId);
  }

  /**
   * A claim is done: `complete` when it took every due job it could (fewer than its limit),
   * `leftBehind` the projects whose due jobs it may have left in the store.
   */
  claimed(complete: boolean, leftBehind: Iterable<string>): void {
    this.everywhere = !complete;
    if (complete) this.projects.clear();
    for (const projectId of leftBehind) this.projects.add(projectId);
  }
}
