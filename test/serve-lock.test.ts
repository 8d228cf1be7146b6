import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, startServer } from './support/spawn-punctual.js';
import { makeTempDir } from './support/temp-dir.js';

describe('one server per SQLite file (real processes)', () => {
  const dir = makeTempDir();
  afterAll(() => dir.remove());

  const boot = async () => {
    const port = await freePort();
    return { port, server: startServer({ DATABASE_URL: `sqlite:${join(dir.path, 'p.db')}`, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' }) };
  };
  const ready = async (port: number) => {
    const deadline = Date.now() + 10_000;
    while ((await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status, () => 0)) !== 200) {
      if (Date.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 50));
    }
    return true;
  };

  it('refuses a second server on the same file, and takes over the lock of a killed one', async () => {
    const first = await boot();
    expect(await ready(first.port)).toBe(true);
    const second = await boot();
    expect(await second.server.exited).toBe(1);
    expect(second.server.output()).toMatch(/Configuration error: Another punctual serve \(pid \d+\) is serving/);
    await first.server.stop('SIGKILL');
    const third = await boot();
    try {
      expect(await ready(third.port)).toBe(true);
    } finally {
      await third.server.stop();
    }
  });
});
