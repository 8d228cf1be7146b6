/**
 * Collects the calls made during one turn of the event loop and runs them as one batch (one
 * statement, one round trip, one commit). Each caller gets its own result or the batch's error.
 *
 * A batch is one statement, so one bad input (a value the database refuses) fails it for every
 * caller. When `splitOn` says the error may be an input's fault, and not the database's (which
 * would fail every input alike), each input runs again alone, so that only its own caller fails.
 * runBatch must change nothing when it throws, so that running an input again is safe.
 */
export class TickBatcher<I, O> {
  private pending: { input: I; resolve: (output: O) => void; reject: (error: unknown) => void }[] = [];

  constructor(
    private readonly runBatch: (inputs: I[]) => Promise<O[]>,
    private readonly splitOn: (error: unknown) => boolean = () => false,
  ) {}

  run(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (this.pending.length === 1) setImmediate(() => void this.flush());
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending;
    this.pending = [];
    try {
      const outputs = await this.runBatch(batch.map((call) => call.input));
      batch.forEach((call, i) => call.resolve(outputs[i]!));
    } catch (error) {
      if (batch.length === 1 || !this.splitOn(error)) {
        for (const call of batch) call.reject(error);
        return;
      }
      // Side by side: the pool bounds how many run at once.
      await Promise.all(
        batch.map(async (call) => {
          try {
            call.resolve((await this.runBatch([call.input]))[0]!);
          } catch (own) {
            call.reject(own);
          }
        }),
      );
    }
  }
}
