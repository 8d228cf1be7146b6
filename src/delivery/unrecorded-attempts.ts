/**
 * A worker's attempts started and not yet recorded (in flight, or answered and being written): at
 * shutdown it waits for none to be left.
 */
export class UnrecordedAttempts {
  private count = 0;
  private readonly waiting: (() => void)[] = [];

  add(): void {
    this.count += 1;
  }

  recorded(): void {
    this.count -= 1;
    if (this.count === 0) for (const resolve of this.waiting.splice(0)) resolve();
  }

  /** Resolves true once none is left, false if some still are after `timeoutMs`. */
  none(timeoutMs: number): Promise<boolean> {
    if (this.count === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.waiting.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
