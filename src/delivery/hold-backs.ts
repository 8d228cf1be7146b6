/**
 * What holds a project's starts back on this worker, whatever room it has:
 * - until an instant: a receiver's Retry-After (SPEC section 11) or the rate's next token, ended by
 *   its timer (hold-timers.ts); a later one wins;
 * - until a write answers: a counted failure of a project with holdOnFailure (SPEC section 13: held
 *   "at once"). The hold is the store's, written with the failure's health record just after its
 *   outcome; from the failure's answer until that write has answered, nothing more of the project
 *   starts here, so none starts between the failure that holds it and the hold.
 */
export class HoldBacks {
  private readonly until = new Map<string, number>();
  private readonly healthWrites = new Map<string, number>();

  /** Nothing of the project starts before `until`; a later hold wins. Returns whether this one is later. */
  holdUntil(projectId: string, until: number): boolean {
    if ((this.until.get(projectId) ?? 0) >= until) return false;
    this.until.set(projectId, until);
    return true;
  }

  /** The hold until `until` ended (its timer fired, maybe a hair early); a later one set meanwhile stays. */
  endHold(projectId: string, until: number): void {
    if (this.until.get(projectId) === until) this.until.delete(projectId);
  }

  healthWriteBegan(projectId: string): void {
    this.healthWrites.set(projectId, (this.healthWrites.get(projectId) ?? 0) + 1);
  }

  healthWriteEnded(projectId: string): void {
    const left = (this.healthWrites.get(projectId) ?? 1) - 1;
    if (left <= 0) this.healthWrites.delete(projectId);
    else this.healthWrites.set(projectId, left);
  }

  isHeld(projectId: string, now: number): boolean {
    return (this.until.get(projectId) ?? 0) > now || this.healthWrites.has(projectId);
  }

  /** The projects held back now. */
  heldAt(now: number): Set<string> {
    const held = new Set(this.healthWrites.keys());
    for (const [projectId, until] of this.until) if (until > now) held.add(projectId);
    return held;
  }
}
