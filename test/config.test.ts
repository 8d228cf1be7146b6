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
    expect(config).toMatchObject({ port: 8080, production: false, allowPrivateWebhooks: true, devReceiver: true, adminToken: null, publicUrl: 'http://localhost:8080' });
    expect(config.database).toMatchObject({ kind: 'sqlite', synchronous: 'FULL' });
    expect(config.plans.unlimited).toEqual({ requestsPerSecond: null, burst: null, jobsPerMonth: null, maxRetriesCap: 3 });
  });

  it('refuses private webhooks by default in production', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).allowPrivateWebhooks).toBe(false);
    expect(loadConfig({ NODE_ENV: 'production', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true' }).allowPrivateWebhooks).toBe(true);
  });

  it('listens on loopback outside production and on every address in production, unless HOST says', () => {
    expect(loadConfig({}).host).toBe('127.0.0.1');
    expect(loadConfig({ NODE_ENV: 'production' }).host).toBe('0.0.0.0');
    expect(loadConfig({ HOST: '0.0.0.0' }).host).toBe('0.0.0.0');
    expect(loadConfig({ NODE_ENV: 'production', HOST: '10.1.2.3' }).host).toBe('10.1.2.3');
  });

  const conveniences = (env: NodeJS.ProcessEnv) => {
    const config = loadConfig(env);
    return { devReceiver: config.devReceiver, privateWebhooks: config.allowPrivateWebhooks };
  };
  const bothOn = { devReceiver: true, privateWebhooks: true };
  const bothOff = { devReceiver: false, privateWebhooks: false };

  it.each(['127.0.0.1', '127.8.9.10', '::1', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', 'localhost', 'LocalHost'])(
    'turns the development receiver and private webhooks on outside production on loopback HOST %s',
    (host) => {
      expect(conveniences({ HOST: host })).toEqual(bothOn);
      expect(loadConfig({ HOST: host }).developmentDefaults).toMatchObject({ on: true, explicit: [] });
    },
  );

  it.each([
    [{ HOST: '0.0.0.0' }, 'HOST 0.0.0.0 is not a loopback address'],
    [{ HOST: '::' }, 'HOST :: is not a loopback address'],
    [{ HOST: '192.168.1.20' }, 'HOST 192.168.1.20 is not a loopback address'],
    [{ HOST: '::ffff:10.0.0.1' }, 'HOST ::ffff:10.0.0.1 is not a loopback address'],
    // A name other than localhost may resolve anywhere.
    [{ HOST: 'jobs.internal' }, 'HOST jobs.internal is not a loopback address'],
    // Listening on loopback, but reached from elsewhere: a proxy on the same machine.
    [{ PUNCTUAL_PUBLIC_URL: 'https://jobs.example.com' }, "PUNCTUAL_PUBLIC_URL's host jobs.example.com is not a loopback address"],
    [{ PUNCTUAL_TRUST_PROXY: 'loopback' }, 'PUNCTUAL_TRUST_PROXY is set, so a proxy forwards requests from elsewhere'],
    [{ NODE_ENV: 'production', HOST: '127.0.0.1' }, 'NODE_ENV=production'],
  ])('keeps them off by default with %j', (env, reason) => {
    expect(conveniences(env)).toEqual(bothOff);
    expect(loadConfig(env).developmentDefaults).toEqual({ on: false, reason, explicit: [] });
  });

  it('lets PUNCTUAL_DEV_RECEIVER and PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS win over the default either way', () => {
    expect(conveniences({ HOST: '0.0.0.0', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'true' })).toEqual({ devReceiver: false, privateWebhooks: true });
    expect(conveniences({ HOST: '0.0.0.0', PUNCTUAL_DEV_RECEIVER: 'yes' })).toEqual({ devReceiver: true, privateWebhooks: false });
    expect(conveniences({ NODE_ENV: 'production', PUNCTUAL_DEV_RECEIVER: '1', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: '1' })).toEqual(bothOn);
    expect(conveniences({ PUNCTUAL_DEV_RECEIVER: 'false' })).toEqual({ devReceiver: false, privateWebhooks: true });
    expect(conveniences({ PUNCTUAL_DEV_RECEIVER: 'no', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'false' })).toEqual(bothOff);
    expect(loadConfig({ HOST: '0.0.0.0', PUNCTUAL_DEV_RECEIVER: 'true' }).developmentDefaults.explicit).toEqual(['PUNCTUAL_DEV_RECEIVER']);
    // Empty is unset, as for every other variable.
    expect(conveniences({ HOST: '0.0.0.0', PUNCTUAL_DEV_RECEIVER: ' ', PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: '' })).toEqual(bothOff);
  });

  it.each([
    [{ PORT: 'eighty' }, /PORT/],
    [{ PORT: '70000' }, /PORT/],
    [{ PUNCTUAL_ADMIN_TOKEN: 'short' }, /PUNCTUAL_ADMIN_TOKEN/],
    [{ PUNCTUAL_SECRET_KEY: 'short' }, /PUNCTUAL_SECRET_KEY/],
    [{ PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS: 'maybe' }, /PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS/],
    [{ PUNCTUAL_DEV_RECEIVER: 'sometimes' }, /PUNCTUAL_DEV_RECEIVER must be true or false, got "sometimes"/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL/],
    [{ PUNCTUAL_SQLITE_SYNCHRONOUS: 'OFF' }, /PUNCTUAL_SQLITE_SYNCHRONOUS/],
    [{ DATABASE_URL: 'postgres://localhost/test' }, /PUNCTUAL_SECRET_KEY is required/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'localhost:4318' }, /OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL/],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'grpc://collector' }, /OTEL_EXPORTER_OTLP_TRACES_ENDPOINT/],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318', OTEL_SDK_DISABLED: 'sometimes' }, /OTEL_SDK_DISABLED/],
  ])('refuses %j with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it('exports spans when an OTLP endpoint is set, unless OTEL_SDK_DISABLED', () => {
    expect(loadConfig({}).otlpTracing).toBe(false);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }).otlpTracing).toBe(false);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318' }).otlpTracing).toBe(true);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example/v1/traces' }).otlpTracing).toBe(true);
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318', OTEL_SDK_DISABLED: 'true' }).otlpTracing).toBe(false);
    // The protocol: http/json unless told http/protobuf; grpc is refused, but only when export is on.
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318' };
    expect(loadConfig(on).otlpProtocol).toBe('http/json');
    expect(loadConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' }).otlpProtocol).toBe('http/protobuf');
    expect(loadConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }).otlpProtocol).toBe('http/protobuf');
    expect(() => loadConfig({ ...on, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_PROTOCOL=grpc: span export over gRPC is not built in; use http\/protobuf or http\/json/);
    expect(() => loadConfig({ ...on, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'thrift' })).toThrow('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL must be http/json or http/protobuf, got "thrift"');
    expect(loadConfig({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }).otlpProtocol).toBe('http/json');
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
      ['rate without burst', '{"x": {"requestsPerSecond": 1, "burst": null, "jobsPerMonth": 1, "maxRetriesCap": 1}}', /both be null \(no rate limit\) or both be numbers/],
      ['a burst below 1', '{"x": {"requestsPerSecond": 1, "burst": 0.5, "jobsPerMonth": 1, "maxRetriesCap": 1}}', /plan "x": "burst" must be a number of at least 1 \(got 0.5\)/],
      ['a burst of 0', '{"x": {"requestsPerSecond": 1, "burst": 0, "jobsPerMonth": 1, "maxRetriesCap": 1}}', /"burst" must be a number of at least 1 \(got 0\)/],
      ['a burst as a string', '{"x": {"requestsPerSecond": 1, "burst": "10", "jobsPerMonth": 1, "maxRetriesCap": 1}}', /"burst" must be a number of at least 1 \(got "10"\)/],
      ['a rate of 0', '{"x": {"requestsPerSecond": 0, "burst": 10, "jobsPerMonth": 1, "maxRetriesCap": 1}}', /plan "x": "requestsPerSecond" must be a number above 0 \(got 0\)/],
      ['a negative rate', '{"x": {"requestsPerSecond": -5, "burst": 10, "jobsPerMonth": 1, "maxRetriesCap": 1}}', /"requestsPerSecond" must be a number above 0 \(got -5\)/],
      ['a negative quota', '{"x": {"requestsPerSecond": null, "burst": null, "jobsPerMonth": -1, "maxRetriesCap": 1}}', /jobsPerMonth/],
      ['a cap of 4', '{"x": {"requestsPerSecond": null, "burst": null, "jobsPerMonth": null, "maxRetriesCap": 4}}', /maxRetriesCap/],
    ])('refuses %s with a clear message', (_name, content, message) => {
      const path = write('bad.json', content);
      expect(() => loadPlans(path)).toThrow(PlanFileError);
      expect(() => loadPlans(path)).toThrow(message);
    });

    it('accepts a burst of exactly 1 and fractional rates', () => {
      const path = write('edge.json', JSON.stringify({ slow: { requestsPerSecond: 0.5, burst: 1, jobsPerMonth: null, maxRetriesCap: 0 } }));
      expect(loadPlans(path).slow).toEqual({ requestsPerSecond: 0.5, burst: 1, jobsPerMonth: null, maxRetriesCap: 0 });
    });

    it('stops the start on a burst below 1, saying which plan and why', () => {
      const path = write('half.json', JSON.stringify({ half: { requestsPerSecond: 10, burst: 0.9, jobsPerMonth: null, maxRetriesCap: 3 } }));
      expect(() => loadConfig({ PUNCTUAL_PLANS: path })).toThrow(
        `PUNCTUAL_PLANS: ${path}: plan "half": "burst" must be a number of at least 1 (got 0.9): a bucket that never holds a whole token refuses every request`,
      );
    });

    it('refuses a missing file', () => {
      expect(() => loadPlans(join(dir.path, 'absent.json'))).toThrow(/cannot read/);
    });
  });
});
