import { BatchedThread, siblingModule, WEBHOOK_THREAD_LIMITS } from '../threads/batched-thread.js';
import type { Sent, WebhookRequest, WebhookSender } from './webhook-client.js';
import type { ThreadAbort, ThreadSend, ThreadSettings } from './webhook-thread.js';

/**
 * Webhook requests made on a worker thread (webhook-thread.ts). Building, signing (HMAC) and
 * sending a request and reading its answer were about a quarter of the main thread's time in
 * bench:e2e, the thread that also parses enqueue requests and commits to SQLite; here they run beside
 * it, on another core. Requests of one turn go to the thread in one message as soon as that
 * turn's microtasks have run (a group commit's starts resolve together), and each comes back when
 * its response arrives, with the others answered in the same turn.
 *
 * The thread starts with the delivery engine (prepare), or at the first request (a test delivery
 * from the CLI). If it dies, the requests it held fail as network errors (retried as the policy
 * says) and the next request starts a new one.
 */
export class ThreadedWebhookSender implements WebhookSender {
  private readonly thread: BatchedThread<ThreadSend, Sent, ThreadAbort>;
  private readonly signalIds = new WeakMap<AbortSignal, number>();
  private nextSignalId = 0;

  constructor(settings: ThreadSettings) {
    this.thread = new BatchedThread({
      moduleUrl: siblingModule('webhook-thread', import.meta.url),
      workerData: settings,
      resourceLimits: WEBHOOK_THREAD_LIMITS,
      send: 'microtask',
    });
  }

  prepare(): void {
    this.thread.prepare();
  }

  async deliver(request: WebhookRequest, abort?: AbortSignal): Promise<Sent> {
    if (abort?.aborted) return { kind: 'aborted', error: 'aborted: the instance shut down before the request left', durationMs: 0, lateMs: 0 };
    const outcome = await this.thread.request({ signal: abort ? this.signalId(abort) : null, request });
    if (outcome.ok) return outcome.value;
    return { kind: 'network_error', error: `webhook thread: ${outcome.error.message}`, durationMs: 0, lateMs: 0 };
  }

  /** Each shutdown signal is told to the thread once, when it fires. */
  private signalId(abort: AbortSignal): number {
    let id = this.signalIds.get(abort);
    if (id === undefined) {
      id = this.nextSignalId++;
      this.signalIds.set(abort, id);
      const signal = id;
      abort.addEventListener('abort', () => this.thread.notify({ signal }), { once: true });
    }
    return id;
  }

  /**
   * Stops the thread without waiting: by now the delivery engine has drained, or aborted what was
   * left at its deadline and stopped waiting for it, and the lease returns any such job.
   */
  close(): Promise<void> {
    return this.thread.terminate();
  }
}
