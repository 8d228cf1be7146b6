import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { BatchedThread, THREAD_STOPPED, type BatchedThreadOptions, type Outcome } from '../../src/threads/batched-thread.js';
import type { EchoAnswer, EchoRelease, EchoRequest, EchoSettings } from '../support/echo-thread.js';
import { makeTempDir } from '../support/temp-dir.js';

/**
 * The helper under the writer, the background connection and the webhook sender, on a real
 * thread (test/support/echo-thread.ts): what its users rely on and their own tests do not show,
 * such as answers in any order, a thread that dies with requests in flight, and the batches held
 * back past maxInFlight.
 */
describe('BatchedThread', () => {
  let threads: BatchedThread<EchoRequest, EchoAnswer, EchoRelease>[] = [];
  const open = (options: Partial<BatchedThreadOptions> & { workerData?: EchoSettings } = {}) => {
    const thread = new BatchedThread<EchoRequest, EchoAnswer, EchoRelease>({ moduleUrl: new URL('../support/echo-thread.ts', import.meta.url), workerData: {}, send: 'immediate', ...options });
    threads.push(thread);
    return thread;
  };
  afterEach(async () => {
    await Promise.all(threads.map((thread) => thread.terminate()));
    threads = [];
  });

  const value = (outcome: Outcome<EchoAnswer>): EchoAnswer => {
    if (!outcome.ok) throw new Error(`expected an answer, got ${outcome.error.message}`);
    return outcome.value;
  };
  /** Records the order in which the given requests settle. */
  const settleOrder = (requests: Record<string, Promise<unknown>>) => {
    const order: string[] = [];
    for (const [name, request] of Object.entries(requests)) void request.then(() => order.push(name));
    return order;
  };

  it('sends the requests of one turn in one message and settles each with its own answer, in the order they come', async () => {
    const thread = open();
    const a = thread.request({ echo: 'a', hold: 'a' });
    const b = thread.request({ echo: 'b' });
    const c = thread.request({ echo: 'c', hold: 'c' });
    const order = settleOrder({ a, b, c });
    expect(value(await b)).toMatchObject({ echo: 'b', batchSize: 3 });
    thread.notify({ release: 'c' });
    expect(value(await c)).toMatchObject({ echo: 'c', batchSize: 3 });
    thread.notify({ release: 'a' });
    expect(value(await a)).toMatchObject({ echo: 'a', batchSize: 3 });
    expect(order).toEqual(['b', 'c', 'a']);
  });

  it('carries a refusal with its code', async () => {
    const thread = open({ send: 'microtask' });
    const [refused, answered] = await Promise.all([thread.request({ fail: 'E_REFUSED' }), thread.request({ echo: 'x' })]);
    expect(refused).toMatchObject({ ok: false, error: { message: 'refused', code: 'E_REFUSED' } });
    expect(value(answered)).toMatchObject({ echo: 'x', batchSize: 2 });
  });

  it.each([
    ['exits', { exit: 3 }],
    ['throws', { crash: 'boom' }],
  ] satisfies [string, EchoRequest][])('fails what was in flight with THREAD_STOPPED when the thread %s, and the next request starts a new thread', async (_how, kill) => {
    const thread = open();
    const first = value(await thread.request({ echo: 'first' }));
    const held = thread.request({ echo: 'held', hold: 'never' });
    await nextTurn();
    const killing = thread.request(kill);
    for (const lost of await Promise.all([held, killing])) expect(lost).toMatchObject({ ok: false, error: { code: THREAD_STOPPED } });
    const next = value(await thread.request({ echo: 'next' }));
    expect(next.echo).toBe('next');
    expect(next.threadId).not.toBe(first.threadId);
  });

  it('holds requests back while maxInFlight batches are unanswered, then sends them together', async () => {
    const thread = open({ maxInFlight: 1 });
    const first = thread.request({ echo: 'first', hold: 'first' });
    await nextTurn();
    const second = thread.request({ echo: 'second' });
    await nextTurn();
    const third = thread.request({ echo: 'third' });
    await nextTurn();
    const order = settleOrder({ first, second, third });
    thread.notify({ release: 'first' });
    expect(value(await first).batchSize).toBe(1);
    expect(value(await second).batchSize).toBe(2);
    expect(value(await third).batchSize).toBe(2);
    expect(order).toEqual(['first', 'second', 'third']);
  });

  it('closes once every request is answered, then runs the goodbye and lets the thread exit', async () => {
    const dir = makeTempDir();
    try {
      const goodbyeFile = join(dir.path, 'goodbye');
      const thread = open({ workerData: { goodbyeFile } });
      const held = thread.request({ echo: 'held', hold: 'held' });
      await nextTurn();
      const closed = thread.close();
      const order = settleOrder({ held, closed });
      const late = thread.request({ echo: 'made while closing' });
      expect(value(await late).echo).toBe('made while closing');
      expect(existsSync(goodbyeFile)).toBe(false);
      thread.notify({ release: 'held' });
      await closed;
      expect(order).toEqual(['held', 'closed']);
      expect(existsSync(goodbyeFile)).toBe(true);
    } finally {
      dir.remove();
    }
  });
});
