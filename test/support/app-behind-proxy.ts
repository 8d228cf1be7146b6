import { systemClock } from '../../src/clock.js';
import { CuttableProxy } from './cuttable-proxy.js';
import { makeTestApp, type TestApp } from './make-app.js';
import { PG_TEST_URL } from './postgres.js';

/**
 * A real-time app with its delivery engine whose PostgreSQL connections go through a CuttableProxy,
 * with short connect and statement timeouts, so that a test can cut the database away from it (and
 * only from it). `applicationName` names its connections in pg_stat_activity.
 */
export async function makeAppBehindProxy(options: { applicationName?: string } = {}): Promise<{ t: TestApp<typeof systemClock>; proxy: CuttableProxy }> {
  const target = new URL(PG_TEST_URL);
  const hostPort = `${target.hostname}:${target.port || 5432}`;
  const proxy = await new CuttableProxy({ host: target.hostname, port: Number(target.port || 5432) }).start();
  const t = await makeTestApp({
    clock: systemClock,
    delivery: true,
    rewriteDatabaseUrl: (url) => {
      const proxied = url.replace(hostPort, `127.0.0.1:${proxy.port}`);
      if (!options.applicationName) return proxied;
      return `${proxied}${proxied.includes('?') ? '&' : '?'}application_name=${options.applicationName}`;
    },
    env: { PUNCTUAL_PG_CONNECT_TIMEOUT_MS: '2000', PUNCTUAL_PG_STATEMENT_TIMEOUT_MS: '3000' },
  });
  return { t, proxy };
}
