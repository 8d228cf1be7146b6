/**
 * A pass that runs in the background of `punctual serve` (firing schedules, sending events): once
 * at start, again when woken, and otherwise after the sleep each pass's result asks for. A wake
 * during a pass runs one more right after it, so nothing asked for meanwhile waits a whole sleep.
 */
export class BackgroundLoop<T> {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;

  constructor(
    private readonly options: {
      pass: () => Promise<T>;
      /** How long to sleep after a pass that returned `result` (null: it failed). */
      sleepMs: (result: T | null) => number;
      onError: (error: unknown) => void;
    },
  ) {}

  start(): void {
    this.stopped = false;
    this.wake();
  }

  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.running = this.options
      .pass()
      .catch((error: unknown) => {
        this.options.onError(error);
        return null;
      })
      .then((result) => {
        this.running = null;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.wake();
          return;
        }
        this.timer = setTimeout(() => this.wake(), this.options.sleepMs(result));
        this.timer.unref();
      });
  }

  /** No pass starts from now on; resolves once the one under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
