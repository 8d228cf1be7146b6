/**
 * Collects the calls made during one turn of the event loop and runs them as one batch (one
 * statement, one round trip, one commit). Each caller gets its own result or the batch's error.
 */
export class TickBatcher<I, O> {
  private pending: { input: I; resolve: (output: O) => void; reject: (error: unknown) => void }[] = [];

  constructor(private readonly runBatch: (inputs: I[]) => Promise<O[]>) {}

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
      for (const call of batch) call.reject(error);
    }
  }
}
