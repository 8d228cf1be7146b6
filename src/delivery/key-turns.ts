/**
 * Key turns (SPEC section 15 with the order rule of section 10): a keyed job's answer gives its
 * key's next job its turn in the store, earlier in due order than jobs a worker may hold, which do
 * not see it. From the answer until a claim begun after its outcome was recorded has looked (and
 * brought that job where the due order sees it), nothing of the project starts on the worker
 * (Capacity.mayStart, reserveStartAtEnqueue; a claim's starts at once are the store's, decided
 * against what is claimable when the claim commits). Until the outcome is recorded the
 * answered job keeps its room for claims: a claim meanwhile would otherwise fill it with later
 * jobs, leaving the looking claim none for the key's next one.
 */
export class KeyTurns {
  private readonly projects = new Map<string, { underWay: number; answered: number }>();
  private answeredTotal = 0;

  /** A keyed job of the project was answered. */
  begin(projectId: string): void {
    const turns = this.projects.get(projectId);
    if (turns) {
      turns.underWay += 1;
      turns.answered += 1;
    } else this.projects.set(projectId, { underWay: 1, answered: 1 });
    this.answeredTotal += 1;
  }

  /** Its outcome is recorded: a claim begun from now on may find the key's next job. */
  recorded(projectId: string): void {
    this.projects.get(projectId)!.answered -= 1;
    this.answeredTotal -= 1;
  }

  /** A claim begun after the outcome was recorded has looked (or none can): the turn is over. */
  looked(projectId: string): void {
    const turns = this.projects.get(projectId)!;
    if (--turns.underWay === 0) this.projects.delete(projectId);
  }

  underWay(projectId: string): boolean {
    return this.projects.has(projectId);
  }

  /** Room kept for the project's keys' next jobs (answered, outcome not yet recorded). */
  answered(projectId: string): number {
    return this.projects.get(projectId)?.answered ?? 0;
  }

  /** The same, all projects together. */
  get answeredAll(): number {
    return this.answeredTotal;
  }
}
