import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { queryRows } from './support/job-fixtures.js';
import { testDatabase } from './support/make-app.js';
import { freePort, startServer } from './support/spawn-punctual.js';
import { makeTempDir } from './support/temp-dir.js';

describe('durability (real process, kill -9)', () => {
  const dir = makeTempDir();
  afterAll(() => dir.remove());

  it('keeps every job whose 201 was sent when the process is killed right after', async () => {
    const port = await freePort();
    const database = await testDatabase(join(dir.path, 'punctual.db'));
    const server = startServer({ DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', PUNCTUAL_SECRET_KEY: 'durability-test-secret-key-0123456789' });
    const acknowledged: string[] = [];
    try {
      const key = (await server.waitForOutput(/API key\s+(pk_[A-Za-z0-9]+)/))[1]!;
      await server.waitForOutput(/API docs:/);
      const send = async (i: number) => {
        const res = await fetch(`http://127.0.0.1:${port}/api/jobs/dispatch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ payload: { i }, scheduledFor: '2027-06-01T00:00:00Z' }),
        });
        if (res.status === 201) acknowledged.push(((await res.json()) as { jobId: string }).jobId);
      };
      // 20 waves of 25 concurrent requests; the kill lands while the last wave's answers arrive.
      for (let wave = 0; wave < 19; wave++) await Promise.all(Array.from({ length: 25 }, (_, i) => send(wave * 25 + i)));
      const last = Array.from({ length: 25 }, (_, i) => send(475 + i).catch(() => undefined));
      await new Promise((r) => setTimeout(r, 5));
      server.child.kill('SIGKILL');
      await Promise.all(last);
    } finally {
      await server.stop('SIGKILL');
    }
    expect(acknowledged.length).toBeGreaterThanOrEqual(475);
    try {
      const stored = new Set((await queryRows<{ id: string }>(database.url, 'SELECT id FROM jobs')).map((r) => r.id));
      const lost = acknowledged.filter((id) => !stored.has(id));
      expect(lost).toEqual([]);
    } finally {
      await database.drop();
    }
  });
});
