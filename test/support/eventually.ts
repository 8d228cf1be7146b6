/**
 * Polls `read` until its value passes `until` (truthy by default), and returns that value; past
 * the deadline it fails, saying what it waited for and the last value seen. The one way tests
 * wait for something asynchronous: never a bare sleep.
 */
export async function eventually<T>(
  read: () => T | Promise<T>,
  options: { what: string; until?: (value: T) => boolean; withinMs?: number; everyMs?: number },
): Promise<T> {
  const { what, until = Boolean, withinMs = 10_000, everyMs = 10 } = options;
  const deadline = Date.now() + withinMs;
  for (;;) {
    const value = await read();
    if (until(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${withinMs} ms (last seen: ${JSON.stringify(value)})`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
