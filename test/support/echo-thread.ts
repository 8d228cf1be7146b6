/**
 * A tiny thread for BatchedThread's own tests (test/threads/batched-thread.test.ts). It echoes each
 * request with the size of the batch it came in and its thread's id; a request that names a hold
 * is answered only when a side message releases that hold, so answers come back in the order the
 * test chooses. `exit` and `crash` end the thread.
 */
import { writeFileSync } from 'node:fs';
import { threadId, workerData } from 'node:worker_threads';
import { serveBatches, type Outcome } from '../../src/threads/batched-thread.js';

export type EchoRequest = { echo: string; hold?: string } | { fail: string } | { exit: number } | { crash: string };
export interface EchoAnswer {
  echo: string;
  batchSize: number;
  threadId: number;
}
export interface EchoRelease {
  release: string;
}
export interface EchoSettings {
  /** Written by the goodbye, so a test sees that it ran. */
  goodbyeFile?: string;
}

const settings = workerData as EchoSettings;
const holds = new Map<string, (() => void)[]>();

serveBatches<EchoRequest, EchoAnswer, EchoRelease>({
  handle: (batch) =>
    batch.map((request): Outcome<EchoAnswer> | Promise<Outcome<EchoAnswer>> => {
      if ('exit' in request) process.exit(request.exit);
      if ('crash' in request) {
        setImmediate(() => {
          throw new Error(request.crash);
        });
        return new Promise(() => {});
      }
      if ('fail' in request) return Promise.reject(Object.assign(new Error('refused'), { code: request.fail }));
      const answer: Outcome<EchoAnswer> = { ok: true, value: { echo: request.echo, batchSize: batch.length, threadId } };
      if (request.hold === undefined) return answer;
      const hold = request.hold;
      return new Promise((resolve) => holds.set(hold, [...(holds.get(hold) ?? []), () => resolve(answer)]));
    }),
  answer: 'immediate',
  side: ({ release }) => {
    for (const resolve of holds.get(release) ?? []) resolve();
    holds.delete(release);
  },
  goodbye: () => {
    if (settings.goodbyeFile) writeFileSync(settings.goodbyeFile, 'goodbye');
  },
});
