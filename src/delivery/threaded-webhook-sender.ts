import type { Worker } from 'node:worker_threads';
import { HELPER_THREAD_LIMITS, siblingModule, startThread } from '../threads/batched-thread.js';
import type { Sent, WebhookRequest, WebhookSender } from './webhook-client.js';
import type { FromThread, ThreadSettings, ToThread } from './webhook-thread.js';

/**
 * Webhook requests made on a worker thread. Building, signing (HMAC) and sending a request and
 * reading its answer were about a quarter of the main thread's time in bench:e2e, the thread that
 * also parses dispatches and commits to SQLite; here they run beside it, on another core. Requests
 * of one turn go to the thread in one message, and its answers come back the same way.
 *
 * The thread starts with the delivery engine (prepare), or at the first request (a test delivery
 * from the CLI).
 * If it dies, the requests it held fail as network errors (retried as the policy says) and the
 * next request starts a new one.
 */
export class ThreadedWebhookSender implements WebhookSender {
  private worker: Worker | null = null;
  private nextId = 0;
  private readonly pending = new Map<number, (result: Sent) => void>();
  private outbox: Extract<ToThread, { kind: 'send' }>['sends'] = [];
  private readonly signalIds = new WeakMap<AbortSignal, number>();
  private nextSignalId = 0;

  constructor(private readonly settings: ThreadSettings) {}

  prepare(): void {
    if (!this.worker) this.start();
  }

  deliver(request: WebhookRequest, abort?: AbortSignal): Promise<Sent> {
    if (abort?.aborted) return Promise.resolve({ kind: 'aborted', error: 'aborted: the instance shut down before the request left', durationMs: 0, lateMs: 0 });
    if (!this.worker) this.start();
    const id = this.nextId++;
    const signal = abort ? this.signalId(abort) : null;
    return new Promise<Sent>((resolve) => {
      this.pending.set(id, resolve);
      this.outbox.push({ id, signal, request });
      // Requests made in this turn (a group commit's starts resolve together) share one message.
      if (this.outbox.length === 1) queueMicrotask(() => this.post());
    });
  }

  private post(): void {
    const sends = this.outbox;
    this.outbox = [];
    this.worker?.postMessage({ kind: 'send', sends } satisfies ToThread);
  }

  /** Each shutdown signal is told to the thread once, when it fires. */
  private signalId(abort: AbortSignal): number {
    let id = this.signalIds.get(abort);
    if (id === undefined) {
      id = this.nextSignalId++;
      this.signalIds.set(abort, id);
      const signal = id;
      abort.addEventListener('abort', () => this.worker?.postMessage({ kind: 'abort', signal } satisfies ToThread), { once: true });
    }
    return id;
  }

  private start(): Worker {
    const worker = startThread(siblingModule('webhook-thread', import.meta.url), this.settings, HELPER_THREAD_LIMITS);
    worker.on('message', ({ results }: FromThread) => {
      for (const { id, result } of results) {
        const resolve = this.pending.get(id);
        this.pending.delete(id);
        resolve?.(result);
      }
    });
    const stopped = (reason: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      for (const resolve of this.pending.values()) resolve({ kind: 'network_error', error: `the webhook thread stopped (${reason})`, durationMs: 0, lateMs: 0 });
      this.pending.clear();
      this.outbox = [];
    };
    worker.on('error', (error) => stopped(error.message));
    worker.on('exit', (code) => stopped(`exit code ${code}`));
    this.worker = worker;
    return worker;
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = null;
    await worker?.terminate();
  }
}
