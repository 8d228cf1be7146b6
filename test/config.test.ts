import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { PlanFileError, loadPlans } from '../src/plans.js';
import { makeTempDir } from './support/temp-dir.js';

describe('configuration', () => {
  const dir = makeTempDir();
  afterAll(() => dir.remove());

  it('has working defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 8080, production: false, allowPrivateWebhooks: true, adminToken: null, publicUrl: 'http://localhost:8080' });
    expect(config.database).toMatchObject({ kind: 'sqlite', synchronous: 'FULL' });
    expect(config.plans.unlimited).toEqual({ requestsPerSecond: null, burst: null, jobsPerMonth: null, maxRetriesCap: 3 });
  });

  it('refuses private webhooks by default in production', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).allowPrivateWebhooks).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true' }).allowPrivateWebhooks).toBe(true);
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ PUNCTUAL_ADMIN_TOKEN: 'short' }, /PUNCTUAL_ADMIN_TOKEN/],
    [{ PUNCTUAL_SECRET_KEY: 'short' }, /PUNCTUAL_SECRET_KEY/],
    [{ PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'maybe' }, /PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ PUNCTUAL_SQLITE_SYNCHRONOUS: 'OFF' }, /PUNCTUAL_SQLITE_SYNCHRONOUS/],
    [{ DATABASE_URL: 'postgres://localhost/test' }, /PUNCTUAL_SECRET_KEY is required/],
  ])('refuses %j with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('reads DATABASE_URL=sqlite:<path>', () => {
    expect(loadConfig({ DATABASE_URL: 'sqlite:/tmp/x/p.db' }).database).toMatchObject({ kind: 'sqlite', path: '/tmp/x/p.db' });
  });

  describe('PUNCTUAL_PLANS', () => {
    const write = (name: string, content: string) => {
      const path = join(dir.path, name);
      writeFileSync(path, content);
      return path;
    };

    it('adds plans and replaces same-named defaults', () => {
      const path = write('ok.json', JSON.stringify({
        gold: { requestsPerSecond: 5, burst: 10, jobsPerMonth: 50, maxRetriesCap: 2 },
        free: { requestsPerSecond: null, burst: null, jobsPerMonth: null, maxRetriesCap: 0 },
      }));
      const plans = loadPlans(path);
      expect(plans.gold).toEqual({ requestsPerSecond: 5, burst: 10, jobsPerMonth: 50, maxRetriesCap: 2 });
      expect(plans.free!.maxRetriesCap).toBe(0);
      expect(plans.pro!.burst).toBe(200);
    });

    it.each([
      ['not JSON', '{', /not valid JSON/],
      ['an array', '[]', /JSON object/],
      ['a missing field', '{"x": {"requestsPerSecond": 1, "burst": 1, "jobsPerMonth": 1}}', /missing "maxRetriesCap"/],
      ['rate without burst', '{"x": {"requestsPerSecond": 1, "burst": null, "jobsPerMonth": 1, "maxRetriesCap": 1}}', /both be null or both be positive/],
      ['a negative quota', '{"x": {"requestsPerSecond": null, "burst": null, "jobsPerMonth": -1, "maxRetriesCap": 1}}', /jobsPerMonth/],
      ['a cap of 4', '{"x": {"requestsPerSecond": null, "burst": null, "jobsPerMonth": null, "maxRetriesCap": 4}}', /maxRetriesCap/],
    ])('refuses %s with a clear message', (_name, content, message) => {
      const path = write('bad.json', content);
      expect(() => loadPlans(path)).toThrow(PlanFileError);
      expect(() => loadPlans(path)).toThrow(message);
    });

    it('refuses a missing file', () => {
      expect(() => loadPlans(join(dir.path, 'absent.json'))).toThrow(/cannot read/);
    });
  });
});
