import { afterAll, beforeAll } from 'vitest';
import { makeTestApp, type TestApp } from './make-app.js';
import { TestReceiver } from './receiver.js';

/** A delivering test app (injected clock) and a receiver, shared by a file's tests. */
export interface DeliveringApp {
  readonly t: TestApp;
  readonly receiver: TestReceiver;
  /** From now on the receiver holds its answers (200) until releaseAnswers, or the file's tests are over. */
  holdAnswers(): void;
  /** The answers held so far go out. */
  releaseAnswers(): void;
}

/**
 * Registers the set-up (before the file's tests) and the tear-down (after them, releasing any
 * held answer first, so the app's close does not wait on a request that never ends).
 */
export function useDeliveringApp(): DeliveringApp {
  let t: TestApp | undefined;
  let receiver: TestReceiver | undefined;
  let release: () => void = () => {};
  beforeAll(async () => {
    receiver = await new TestReceiver().start();
    t = await makeTestApp({ delivery: true });
  });
  afterAll(async () => {
    release();
    await t?.close();
    await receiver?.close();
  });
  return {
    get t() {
      return t!;
    },
    get receiver() {
      return receiver!;
    },
    holdAnswers() {
      const held = new Promise<void>((resolve) => (release = resolve));
      receiver!.answer({ status: 200, held });
    },
    releaseAnswers() {
      release();
    },
  };
}
