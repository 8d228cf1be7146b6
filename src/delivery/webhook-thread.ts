/**
 * The body of ThreadedWebhookSender's worker thread: a WebhookClient (undici pools, the address
 * guard, signing) that takes requests from the main thread in batches and answers in batches.
 */
import { setMaxListeners } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import { WebhookClient, type Sent, type WebhookRequest } from './webhook-client.js';

export interface ThreadSettings {
  allowPrivate: boolean;
  userAgent: string;
}

/** From the main thread. An abort names the signal its requests were sent under. */
export type ToThread = { kind: 'send'; sends: { id: number; signal: number | null; request: WebhookRequest }[] } | { kind: 'abort'; signal: number };
/** To the main thread. */
export interface FromThread {
  results: { id: number; result: Sent }[];
}

const port = parentPort!;
const client = new WebhookClient(workerData as ThreadSettings);
const aborts = new Map<number, AbortController>();
let results: FromThread['results'] = [];

function answer(id: number, result: Sent): void {
  results.push({ id, result });
  // Answers of one turn go back in one message.
  if (results.length === 1) {
    setImmediate(() => {
      port.postMessage({ results } satisfies FromThread);
      results = [];
    });
  }
}

function controllerFor(signal: number): AbortController {
  let controller = aborts.get(signal);
  if (!controller) {
    aborts.set(signal, (controller = new AbortController()));
    // Every request in flight listens on its signal: hundreds of listeners is expected.
    setMaxListeners(0, controller.signal);
  }
  return controller;
}

port.on('message', (message: ToThread) => {
  if (message.kind === 'abort') {
    controllerFor(message.signal).abort();
    return;
  }
  for (const { id, signal, request } of message.sends) {
    void client.deliver(request, signal === null ? undefined : controllerFor(signal).signal).then((result) => answer(id, result));
  }
});
