/**
 * Request/answer over a worker thread, for the work that must not run on the event loop: the
 * embedded store's writes (store/sqlite/writer.ts), its checkpoints and counts
 * (store/sqlite/background-connection.ts) and webhook requests (delivery/threaded-webhook-sender.ts).
 * `BatchedThread` is the main thread's side, `serveBatches` the thread's.
 *
 * Each message costs both event loops a copy and a wake-up, so it is batched per turn in both
 * directions: the requests made in one turn go to the thread in one message, and the answers
 * ready in one turn come back in one. Requests are numbered and answers name them, so a thread
 * answers in any order and grouping: the writer a whole batch once its transaction is durable,
 * the webhook thread each request when its response arrives.
 */
import { parentPort, Worker, type ResourceLimits } from 'node:worker_threads';

/** What crosses the thread boundary for a failed request: an Error's name, message and code. */
interface ThreadError {
  name: string;
  message: string;
  code?: string;
}

export type Outcome<A> = { ok: true; value: A } | { ok: false; error: ThreadError };

/**
 * When what was queued during a turn leaves: once the microtasks queued with it have run
 * ('microtask', the soonest), or after the I/O phase ('immediate'), so that everything parsed or
 * completed in that phase joins.
 */
type TurnEnd = 'microtask' | 'immediate';

function atEndOf(turn: TurnEnd, fn: () => void): void {
  if (turn === 'immediate') setImmediate(fn);
  else queueMicrotask(fn);
}

/** Main → thread. A batch's requests are numbered from `first`, in order. */
type ToThread<R, S> = { first: number; requests: R[] } | { side: S } | { goodbye: true };
/** Thread → main: `outcomes[i]` answers the request numbered `ids[i]`. */
interface Answers<A> {
  ids: number[];
  outcomes: Outcome<A>[];
}

/**
 * A worker running `moduleUrl`. From the TypeScript sources (tests, tsx) the thread first
 * registers tsx's loader, which a worker does not inherit; the built code needs nothing.
 */
function startThread(moduleUrl: URL, workerData: unknown, resourceLimits?: ResourceLimits): Worker {
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

/**
 * The webhook thread is the exception: every request it sends makes garbage (headers, body
 * buffers, the parsed answer), and with a hundred in flight a small young generation is collected
 * so often that its survivors are copied again and again. 32 MB took a quarter off its CPU per
 * request (117-124 → 87-99 µs in a microbenchmark of signed deliveries, 100 in flight) for up to
 * 24 MB more resident memory.
 */
export const WEBHOOK_THREAD_LIMITS: ResourceLimits = { maxYoungGenerationSizeMb: 32 };

/** `./name.js` beside `base` when running built code, `./name.ts` when running the TypeScript sources. */
export function siblingModule(name: string, base: string): URL {
  return new URL(`./${name}.${base.endsWith('.ts') ? 'ts' : 'js'}`, base);
}

/** The code of a request lost with a thread that died before answering it. */
export const THREAD_STOPPED = 'THREAD_STOPPED';

export interface BatchedThreadOptions {
  /** The thread's module, which calls `serveBatches`. */
  moduleUrl: URL;
  workerData: unknown;
  resourceLimits?: ResourceLimits;
  /** When the requests of a turn leave (see TurnEnd). */
  send: TurnEnd;
  /**
   * Batches sent and not wholly answered, at most; requests made meanwhile wait and go together
   * when one is answered. Under load this makes fewer, larger batches at no cost when idle, when a
   * batch leaves at once. Unbounded if absent.
   */
  maxInFlight?: number;
  /** The thread does not keep the process alive (one that only works on a timer of its own). */
  unref?: boolean;
}

type Settle<A> = (outcome: Outcome<A>) => void;

/** A batch sent and not wholly answered: `settlers[i]` settles the request numbered `first + i`, once. */
interface SentBatch<A> {
  first: number;
  settlers: (Settle<A> | null)[];
  unanswered: number;
}

/**
 * The main thread's side. The thread starts at `prepare()` or with the first batch. If it dies,
 * every request sent to it and not answered fails with the code THREAD_STOPPED, and what was not
 * sent yet, like the next request, goes to a new thread.
 */
export class BatchedThread<R, A, S = never> {
  private worker: Worker | null = null;
  private exited: Promise<void> = Promise.resolve();
  private outbox: R[] = [];
  private outboxSettlers: Settle<A>[] = [];
  private flushScheduled = false;
  private nextId = 0;
  /**
   * Batches sent and not wholly answered, oldest first (so by number). An answer finds its batch
   * by a binary search: nothing is kept per request beyond its settler, on the ingest path.
   */
  private inFlight: SentBatch<A>[] = [];
  /** Called when requests are answered or lost with their thread (close waits on it). */
  private progressWaiters: (() => void)[] = [];

  constructor(private readonly options: BatchedThreadOptions) {}

  /** Starts the thread now rather than with the first batch. */
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

  /**
   * A message beside the requests (an abort), posted at once, ahead of requests waiting to be
   * sent. It reaches the running thread only: one started later does not get it.
   */
  notify(message: S): void {
    const worker = this.worker ?? (this.outbox.length > 0 ? this.start() : null);
    worker?.postMessage({ side: message } satisfies ToThread<R, S>);
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    atEndOf(this.options.send, () => this.flush());
  }

  /** Sends what is waiting, if fewer than maxInFlight batches are unanswered. */
  private flush(): void {
    this.flushScheduled = false;
    const count = this.outbox.length;
    if (count === 0 || this.inFlight.length >= (this.options.maxInFlight ?? Number.POSITIVE_INFINITY)) return;
    const worker = this.worker ?? this.start();
    const first = this.nextId;
    this.inFlight.push({ first, settlers: this.outboxSettlers, unanswered: count });
    this.nextId += count;
    worker.postMessage({ first, requests: this.outbox } satisfies ToThread<R, S>);
    this.outbox = [];
    this.outboxSettlers = [];
  }

  private start(): Worker {
    const worker = startThread(this.options.moduleUrl, this.options.workerData, this.options.resourceLimits);
    if (this.options.unref) worker.unref();
    worker.on('message', (answers: Answers<A>) => this.receive(answers));
    worker.on('error', (error) => this.stopped(worker, error.message));
    this.exited = new Promise<void>((resolve) =>
      worker.once('exit', (code) => {
        this.stopped(worker, `exit code ${code}`);
        resolve();
      }),
    );
    this.worker = worker;
    return worker;
  }

  private receive({ ids, outcomes }: Answers<A>): void {
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      const at = this.batchHolding(id);
      // Numbers are never reused: a late answer from a thread that stopped matches nothing.
      if (at < 0) continue;
      const batch = this.inFlight[at]!;
      const settle = batch.settlers[id - batch.first];
      if (!settle) continue;
      batch.settlers[id - batch.first] = null;
      if (--batch.unanswered === 0) this.inFlight.splice(at, 1);
      settle(outcomes[i]!);
    }
    // What waited for room goes now, with whatever the settled requests add in this turn.
    if (this.outbox.length > 0) this.scheduleFlush();
    this.progressed();
  }

  /** The index in inFlight of the batch that holds request `id`, or -1. */
  private batchHolding(id: number): number {
    let low = 0;
    let high = this.inFlight.length - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const batch = this.inFlight[mid]!;
      if (id < batch.first) high = mid - 1;
      else if (id >= batch.first + batch.settlers.length) low = mid + 1;
      else return mid;
    }
    return -1;
  }

  private stopped(worker: Worker, reason: string): void {
    if (this.worker !== worker) return;
    this.worker = null;
    const lost: Outcome<A> = { ok: false, error: { name: 'Error', message: `thread stopped before answering (${reason})`, code: THREAD_STOPPED } };
    const lostBatches = this.inFlight;
    this.inFlight = [];
    for (const batch of lostBatches) for (const settle of batch.settlers) settle?.(lost);
    if (this.outbox.length > 0) this.scheduleFlush();
    this.progressed();
  }

  private progressed(): void {
    if (this.progressWaiters.length === 0) return;
    for (const resolve of this.progressWaiters.splice(0)) resolve();
  }

  /**
   * Waits until every request made so far is answered (or lost with its thread), then lets the
   * thread go: the goodbye given to `serveBatches` runs there, and the thread exits once nothing
   * else keeps it alive. A request made afterwards starts a new thread.
   */
  async close(): Promise<void> {
    // An unref'd thread too: the caller goes on only once it has gone.
    this.worker?.ref();
    this.flush();
    while (this.inFlight.length > 0 || this.outbox.length > 0) await new Promise<void>((resolve) => this.progressWaiters.push(resolve));
    const worker = this.worker;
    const exited = this.exited;
    // Gone already, or let go by another close() that is waiting for it to exit.
    if (!worker) return exited;
    this.worker = null;
    worker.postMessage({ goodbye: true } satisfies ToThread<R, S>);
    await exited;
  }

  /**
   * Stops the thread at once. Requests not answered yet are dropped and never settle: for a
   * caller that has stopped waiting for them (a shutdown past its drain deadline), whose results
   * could no longer be recorded anyway.
   */
  async terminate(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    this.inFlight = [];
    this.outbox = [];
    this.outboxSettlers = [];
    await worker?.terminate();
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
 * The answers to a batch, in its order: each on its own (ready now, or a promise of it), or all
 * together (a promise of them all: the writer's, whose writes are durable together).
 */
type BatchAnswers<A> = (Outcome<A> | Promise<Outcome<A>>)[] | Promise<Outcome<A>[]>;

interface BatchServer<R, A, S = never> {
  handle(batch: R[]): BatchAnswers<A>;
  /** When the answers ready during a turn go back (see TurnEnd). */
  answer: TurnEnd;
  /** A message sent with `BatchedThread.notify`. */
  side?(message: S): void;
  /**
   * Runs when the main thread closes the thread, after every request was answered; then the
   * thread's port closes, and the thread exits once nothing else (a timer, a socket) keeps it alive.
   */
  goodbye?(): void | Promise<void>;
}

/** The thread's side: answers each request of the batches `BatchedThread` sends, as `server` says. */
export function serveBatches<R, A, S = never>(server: BatchServer<R, A, S>): void {
  const port = parentPort;
  if (!port) throw new Error('serveBatches runs in a worker thread');
  let ids: number[] = [];
  let outcomes: Outcome<A>[] = [];
  const post = () => {
    port.postMessage({ ids, outcomes } satisfies Answers<A>);
    ids = [];
    outcomes = [];
  };
  const answer = (id: number, outcome: Outcome<A>) => {
    ids.push(id);
    outcomes.push(outcome);
    if (ids.length === 1) atEndOf(server.answer, post);
  };
  const failed = (error: unknown): Outcome<A> => ({ ok: false, error: toThreadError(error) });
  port.on('message', (message: ToThread<R, S>) => {
    if ('requests' in message) {
      const { first, requests } = message;
      const answerEach = (answers: (Outcome<A> | Promise<Outcome<A>>)[]) => {
        for (let i = 0; i < requests.length; i++) {
          const id = first + i;
          const outcome = answers[i] ?? failed(new Error('no answer from the thread'));
          if (outcome instanceof Promise) {
            outcome.then(
              (ready) => answer(id, ready),
              (error: unknown) => answer(id, failed(error)),
            );
          } else {
            answer(id, outcome);
          }
        }
      };
      let answers: BatchAnswers<A>;
      try {
        answers = server.handle(requests);
      } catch (error) {
        answers = requests.map(() => failed(error));
      }
      if (answers instanceof Promise) answers.then(answerEach, (error: unknown) => answerEach(requests.map(() => failed(error))));
      else answerEach(answers);
    } else if ('side' in message) {
      server.side?.(message.side);
    } else {
      void (async () => {
        try {
          await server.goodbye?.();
        } finally {
          port.close();
        }
      })();
    }
  });
}
