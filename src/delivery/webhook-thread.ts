/**
 * The body of ThreadedWebhookSender's worker thread: a WebhookClient (undici pools, the address
 * guard, signing) that takes the requests of a turn in one message and answers each when its
 * response arrives, those answered in one turn in one message.
 */
import { setMaxListeners } from 'node:events';
import { workerData } from 'node:worker_threads';
import { serveBatches } from '../threads/batched-thread.js';
import { WebhookClient, type Sent, type WebhookRequest } from './webhook-client.js';

export interface ThreadSettings {
  allowPrivate: boolean;
  userAgent: string;
}

/** One request, and the shutdown signal it was sent under (numbered: a signal cannot cross threads). */
export interface ThreadSend {
  signal: number | null;
  request: WebhookRequest;
}
/** Side message: that signal fired. */
export interface ThreadAbort {
  signal: number;
}

const client = new WebhookClient(workerData as ThreadSettings);
const aborts = new Map<number, AbortController>();

function controllerFor(signal: number): AbortController {
  let controller = aborts.get(signal);
  if (!controller) {
    aborts.set(signal, (controller = new AbortController()));
    // Every request in flight listens on its signal: hundreds of listeners is expected.
    setMaxListeners(0, controller.signal);
  }
  return controller;
}

serveBatches<ThreadSend, Sent, ThreadAbort>({
  handle: (batch) =>
    batch.map(({ signal, request }) =>
      client.deliver(request, signal === null ? undefined : controllerFor(signal).signal).then((sent) => ({ ok: true as const, value: sent })),
    ),
  // Responses arrive one callback each in the I/O phase: those of one phase go back together.
  answer: 'immediate',
  side: ({ signal }) => controllerFor(signal).abort(),
});
