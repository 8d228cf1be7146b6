/**
 * Request/answer over a worker thread, batched per event-loop turn in both directions: the
 * requests made in one turn go to the thread in one message, and the thread answers each batch
 * with one message. Used for the work that must not run on the event loop (the embedded store's
 * writes). The thread's side is `serveBatches` below.
 */
import { parentPort, Worker, type ResourceLimits } from 'node:worker_threads';

/** What crosses the thread boundary for a failed request: an Error's name, message and code. */
export interface ThreadError {
  name: string;
  message: string;
  code?: string;
}

export type Outcome<A> = { ok: true; value: A } | { ok: false; error: ThreadError };

interface BatchMessage<R> {
  batch: R[];
}
interface AnswersMessage<A> {
  answers: Outcome<A>[];
}

/**
 * A worker running `moduleUrl`. From the TypeScript sources (tests, tsx) the thread first
 * registers tsx's loader, which a worker does not inherit; the built code needs nothing.
 */
export function startThread(moduleUrl: URL, workerData: unknown, resourceLimits?: ResourceLimits): Worker {
  const options = { workerData, ...(resourceLimits && { resourceLimits }) };
  if (!moduleUrl.pathname.endsWith('.ts')) return new Worker(moduleUrl, options);
  const bootstrap = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(moduleUrl.href)}); })`;
  return new Worker(bootstrap, { ...options, eval: true });
}

/**
 * A helper thread's young generation: V8 lets each isolate's grow to 48 MB by default, which the
 * short-lived messages of these threads fill before any collection; a few MB keep them as fast
 * and cut the process's resident memory by tens of MB.
 */
export const HELPER_THREAD_LIMITS: ResourceLimits = { maxYoungGenerationSizeMb: 8 };

/** `./name.js` beside `base` when running built code, `./name.ts` when running the TypeScript sources. */
export function siblingModule(name: string, base: string): URL {
  return new URL(`./${name}.${base.endsWith('.ts') ? 'ts' : 'js'}`, base);
}

/** The code of a request lost with a thread that died before answering it. */
export const THREAD_STOPPED = 'THREAD_STOPPED';

/**
 * The main thread's side. Batches go out in order and the thread answers them in order, so the
 * answers of a batch settle the oldest batch in flight. If the thread dies, every request in
 * flight fails with the code THREAD_STOPPED and the next request starts a new thread.
 */
export class BatchedThread<R, A> {
  private worker: Worker | null = null;
  private outbox: R[] = [];
  private outboxSettlers: ((outcome: Outcome<A>) => void)[] = [];
  private inFlight: ((outcome: Outcome<A>) => void)[][] = [];
  private flushScheduled = false;

  constructor(
    private readonly options: {
      moduleUrl: URL;
      workerData: unknown;
      resourceLimits?: ResourceLimits;
      /**
       * Batches sent and not yet answered, at most; requests made meanwhile wait and go together
       * when one is answered. Under load this makes fewer, larger batches (each message costs the
       * event loop a copy and a wake-up) at no cost when idle, when a batch leaves at once.
       */
      maxInFlight?: number;
    },
  ) {}

  /** Starts the thread now rather than at the first request. */
  prepare(): void {
    if (!this.worker) this.start();
  }

  request(request: R): Promise<Outcome<A>> {
    return new Promise<Outcome<A>>((settle) => {
      this.outbox.push(request);
      this.outboxSettlers.push(settle);
      this.scheduleFlush();
    });
  }

  /** After the I/O phase (setImmediate), so every request parsed in it joins the batch. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  /** Sends what is waiting now, if fewer than maxInFlight batches are unanswered (also used before closing). */
  flush(): void {
    this.flushScheduled = false;
    if (this.outbox.length === 0) return;
    if (this.inFlight.length >= (this.options.maxInFlight ?? Number.POSITIVE_INFINITY)) return;
    const worker = this.worker ?? this.start();
    const batch = this.outbox;
    this.inFlight.push(this.outboxSettlers);
    this.outbox = [];
    this.outboxSettlers = [];
    worker.postMessage({ batch } satisfies BatchMessage<R>);
  }

  private start(): Worker {
    const worker = startThread(this.options.moduleUrl, this.options.workerData, this.options.resourceLimits);
    worker.on('message', ({ answers }: AnswersMessage<A>) => {
      const settlers = this.inFlight.shift();
      if (!settlers) return;
      settlers.forEach((settle, i) => settle(answers[i] ?? { ok: false, error: { name: 'Error', message: 'no answer from the thread' } }));
      // What waited for room goes now, with whatever the settled requests add in this turn.
      if (this.outbox.length > 0) this.scheduleFlush();
    });
    const stopped = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = null;
      const lost = this.inFlight.flat();
      this.inFlight = [];
      const reason: ThreadError = { name: 'Error', message: `the thread stopped: ${error.message}`, code: THREAD_STOPPED };
      for (const settle of lost) settle({ ok: false, error: reason });
    };
    worker.on('error', stopped);
    worker.on('exit', (code) => stopped(new Error(`exit code ${code}`)));
    this.worker = worker;
    return worker;
  }

  /** Stops the thread after it answered everything sent; `goodbye` is posted to it first. */
  async close(goodbye?: unknown): Promise<void> {
    this.flush();
    const worker = this.worker;
    if (!worker) return;
    while ((this.inFlight.length > 0 || this.outbox.length > 0) && this.worker === worker) {
      await new Promise<void>((resolve) => worker.once('message', () => setImmediate(resolve)));
    }
    this.worker = null;
    if (goodbye !== undefined) {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      worker.postMessage({ goodbye });
      await exited;
    } else {
      await worker.terminate();
    }
  }
}

export function toThreadError(error: unknown): ThreadError {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return { name: error.name, message: error.message, ...(typeof code === 'string' && { code }) };
  }
  return { name: 'Error', message: String(error) };
}

/** An Error rebuilt on the main thread from what the thread sent, with its code. */
export function fromThreadError(error: ThreadError): Error {
  const rebuilt = new Error(error.message);
  rebuilt.name = error.name;
  if (error.code !== undefined) Object.assign(rebuilt, { code: error.code });
  return rebuilt;
}

/**
 * The thread's side: answers each batch with one message, in the order the batches came, even
 * when `handle` answers asynchronously. `onGoodbye` runs when the main thread closes the thread
 * (after every batch was answered), then the thread's port closes so it can exit.
 */
export function serveBatches<R, A>(
  handle: (batch: R[]) => Outcome<A>[] | Promise<Outcome<A>[]>,
  onGoodbye: () => void | Promise<void> = () => {},
): void {
  const port = parentPort;
  if (!port) throw new Error('serveBatches runs in a worker thread');
  let answered: Promise<void> = Promise.resolve();
  port.on('message', (message: BatchMessage<R> | { goodbye: unknown }) => {
    if ('goodbye' in message) {
      answered = answered.then(async () => {
        await onGoodbye();
        port.close();
      });
      return;
    }
    const answers = handle(message.batch);
    answered = answered.then(async () => {
      port.postMessage({ answers: await answers } satisfies AnswersMessage<A>);
    });
  });
}
