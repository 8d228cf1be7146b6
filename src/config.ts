import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { developmentDefaults, type ConvenienceVariable, type DevelopmentDefaults } from './development-conveniences.js';
import { loadPlans, type Plans } from './plans.js';
import { DEFAULT_RETENTION_DAYS, MIN_SERVER_RETENTION_DAYS, RETENTION_DAYS_RANGE } from './retention.js';

/** SPEC.md section 8: everything comes from the environment and is validated before anything starts. */
export interface Config {
  nodeEnv: string;
  production: boolean;
  database:
    | { kind: 'sqlite'; path: string; synchronous: 'FULL' | 'NORMAL' }
    | { kind: 'postgres'; url: string; poolSize: number; connectTimeoutMs: number; statementTimeoutMs: number };
  redisUrl: string | null;
  /** Where to listen (HOST): 127.0.0.1 by default outside production, 0.0.0.0 in production. */
  host: string;
  port: number;
  /** Base URL printed in the quickstart and used for the development receiver. */
  publicUrl: string;
  /**
   * Which peers' X-Forwarded-For, -Proto and -Host to believe (request.ip, request.protocol,
   * request.host): none (false), every one (true), the nearest N hops, or these addresses and ranges.
   */
  trustProxy: TrustProxy;
  adminToken: string | null;
  /** The login of the first dashboard user, created on first start (PUNCTUAL_ADMIN_EMAIL). */
  adminEmail: string;
  secretKey: string | null;
  /** Whether webhooks may reach private and reserved addresses (PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS). */
  allowPrivateWebhooks: boolean;
  /** Whether GET and POST /dev/receiver are mounted (PUNCTUAL_DEV_RECEIVER). */
  devReceiver: boolean;
  /** Where the two above come from, for the start-up log (src/development-conveniences.ts). */
  developmentDefaults: DevelopmentDefaults;
  plans: Plans;
  logLevel: string;
  /**
   * JSON lines for a log collector, or readable lines for a person at a terminal (LOG_FORMAT;
   * by default pretty when standard output is a terminal outside production).
   */
  logFormat: LogFormat;
  /** Delivery attempts in flight at once, across all projects, per instance. */
  deliveryConcurrency: number;
  /** On SIGTERM, how long in-flight deliveries may run before they are aborted and released. */
  shutdownDrainMs: number;
  /**
   * How long a client may take to send a request's headers and body (SPEC section 8: 30 s); past
   * it the request is answered 408 and its connection closed. An idle connection ends the same way.
   */
  requestTimeoutMs: number;
  /** Client connections open at once per instance; a connection past it is closed as it arrives. */
  maxConnections: number;
  /** Days final jobs are kept where a project sets none (PUNCTUAL_RETENTION_DAYS, SPEC section 12). */
  retentionDays: number;
  /**
   * Export spans of enqueue requests, claims and attempts over OTLP/HTTP (src/tracing/): on when
   * OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set and OTEL_SDK_DISABLED
   * is not true. The SDK reads those and the other OTEL_ variables itself.
   */
  otlpTracing: boolean;
  /**
   * How spans are encoded (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL):
   * http/json (the default) or http/protobuf, both over OTLP/HTTP. grpc is refused when export is on.
   */
  otlpProtocol: OtlpProtocol;
}

export type OtlpProtocol = 'http/json' | 'http/protobuf';

export type TrustProxy = boolean | number | string[];

export type LogFormat = 'json' | 'pretty';

export class ConfigError extends Error {}

const DEFAULT_SQLITE_PATH = './data/punctual.db';

const CONVENIENCE_VARIABLES: ConvenienceVariable[] = ['PUNCTUAL_DEV_RECEIVER', 'PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS'];

function parseBoolean(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (['true', '1', 'yes'].includes(value.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(value.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${value}"`);
}

function parseIntegerIn(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined || value.trim() === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got "${value}"`);
  return n;
}

/**
 * Unlike a project's retentionDays (whole days, 1 to 3,650), the server's default may be a fraction
 * of a day down to MIN_SERVER_RETENTION_DAYS: a short-lived deployment, or a soak test that must
 * see deletion keep pace with creation within minutes.
 */
function parseRetentionDays(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULT_RETENTION_DAYS;
  const days = Number(value);
  const max = RETENTION_DAYS_RANGE[1];
  if (!Number.isFinite(days) || days < MIN_SERVER_RETENTION_DAYS || days > max) {
    throw new ConfigError(`PUNCTUAL_RETENTION_DAYS must be a number of days from ${MIN_SERVER_RETENTION_DAYS} to ${max}, got "${value}"`);
  }
  return days;
}

function parseLogFormat(value: string | undefined, production: boolean, stdoutIsTerminal: boolean): LogFormat {
  const text = value?.trim().toLowerCase() ?? '';
  if (text === '') return stdoutIsTerminal && !production ? 'pretty' : 'json';
  if (text === 'json' || text === 'pretty') return text;
  throw new ConfigError(`LOG_FORMAT must be json or pretty, got "${value}"`);
}

/** proxy-addr's names for ranges (127.0.0.1/8 and ::1; 169.254.0.0/16 and fe80::/10; 10/8, 172.16/12, 192.168/16 and fc00::/7). */
const NAMED_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isAddressOrRange(entry: string): boolean {
  if (NAMED_RANGES.has(entry)) return true;
  const [address = '', prefix, ...rest] = entry.split('/');
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}

function parseTrustProxy(value: string | undefined): TrustProxy {
  const text = value?.trim() ?? '';
  if (text === '' || /^(false|no)$/i.test(text)) return false;
  if (/^(true|yes)$/i.test(text)) return true;
  // Digits are a hop count, so "1" is one proxy in front, not "true".
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops > 100) throw new ConfigError(`PUNCTUAL_TRUST_PROXY as a hop count must be from 0 to 100, got "${value}"`);
    return hops === 0 ? false : hops;
  }
  const entries = text.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !isAddressOrRange(entry));
  if (bad !== undefined) {
    throw new ConfigError(
      `PUNCTUAL_TRUST_PROXY must be true, false, a hop count or a comma-separated list of IP addresses and CIDR ranges (or loopback, linklocal, uniquelocal); "${bad}" is none of these`,
    );
  }
  return entries;
}

/** Read only when export is on: a protocol left over in an environment without an endpoint changes nothing. */
function parseOtlpProtocol(env: NodeJS.ProcessEnv, tracing: boolean): OtlpProtocol {
  const name = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const value = env[name]?.trim();
  if (!tracing || !value || value === 'http/json') return 'http/json';
  if (value === 'http/protobuf') return value;
  if (value === 'grpc') {
    throw new ConfigError(
      `${name}=grpc: span export over gRPC is not built in; use http/protobuf or http/json, with the collector's OTLP/HTTP endpoint (usually port 4318)`,
    );
  }
  throw new ConfigError(`${name} must be http/json or http/protobuf, got "${value}"`);
}

function parseOtlpTracing(env: NodeJS.ProcessEnv): boolean {
  const endpoints = (['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] as const).filter((name) => env[name]?.trim());
  for (const name of endpoints) {
    let url: URL | null = null;
    try {
      url = new URL(env[name]!.trim());
    } catch {
      // reported below
    }
    if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
      throw new ConfigError(`${name} must be an http or https URL (e.g. http://localhost:4318), got "${env[name]}"`);
    }
  }
  return endpoints.length > 0 && !parseBoolean('OTEL_SDK_DISABLED', env.OTEL_SDK_DISABLED, false);
}

function parseDatabase(env: NodeJS.ProcessEnv): Config['database'] {
  const url = env.DATABASE_URL?.trim();
  const synchronous = (env.PUNCTUAL_SQLITE_SYNCHRONOUS ?? 'FULL').toUpperCase();
  if (synchronous !== 'FULL' && synchronous !== 'NORMAL') {
    throw new ConfigError(`PUNCTUAL_SQLITE_SYNCHRONOUS must be FULL or NORMAL, got "${env.PUNCTUAL_SQLITE_SYNCHRONOUS}"`);
  }
  if (!url) return { kind: 'sqlite', path: resolve(DEFAULT_SQLITE_PATH), synchronous };
  if (url.startsWith('sqlite:')) {
    const path = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new ConfigError('DATABASE_URL "sqlite:" needs a file path, e.g. sqlite:./data/punctual.db');
    return { kind: 'sqlite', path: resolve(path), synchronous };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    return {
      kind: 'postgres',
      url,
      poolSize: parseIntegerIn('PUNCTUAL_PG_POOL_SIZE', env.PUNCTUAL_PG_POOL_SIZE, 10, 1, 1_000),
      connectTimeoutMs: parseIntegerIn('PUNCTUAL_PG_CONNECT_TIMEOUT_MS', env.PUNCTUAL_PG_CONNECT_TIMEOUT_MS, 5_000, 100, 60_000),
      statementTimeoutMs: parseIntegerIn('PUNCTUAL_PG_STATEMENT_TIMEOUT_MS', env.PUNCTUAL_PG_STATEMENT_TIMEOUT_MS, 10_000, 100, 600_000),
    };
  }
  throw new ConfigError('DATABASE_URL must be sqlite:<path> or postgres://…');
}

/** `stdoutIsTerminal` picks the default LOG_FORMAT; a test passes it instead of having a terminal. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, stdoutIsTerminal = process.stdout.isTTY === true): Config {
  const nodeEnv = env.NODE_ENV ?? 'development';
  const production = nodeEnv === 'production';
  const port = env.PORT === undefined || env.PORT === '' ? 8080 : Number(env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`PORT must be an integer from 0 to 65535, got "${env.PORT}"`);
  const adminToken = env.PUNCTUAL_ADMIN_TOKEN?.trim() || null;
  if (adminToken !== null && adminToken.length < 16) throw new ConfigError('PUNCTUAL_ADMIN_TOKEN must be at least 16 characters');
  const secretKey = env.PUNCTUAL_SECRET_KEY?.trim() || null;
  if (secretKey !== null && secretKey.length < 32) throw new ConfigError('PUNCTUAL_SECRET_KEY must be at least 32 characters (e.g. openssl rand -base64 32)');
  const database = parseDatabase(env);
  const otlpTracing = parseOtlpTracing(env);
  if (database.kind === 'postgres' && secretKey === null) {
    throw new ConfigError('PUNCTUAL_SECRET_KEY is required with PostgreSQL, so that every instance can read the webhook secrets');
  }
  // Outside production only this machine reaches the service unless HOST says otherwise: the
  // quickstart's conveniences stay on and nothing else on the network sees them.
  const host = env.HOST?.trim() || (production ? '0.0.0.0' : '127.0.0.1');
  let publicUrl = env.PUNCTUAL_PUBLIC_URL?.trim() || `http://localhost:${port}`;
  publicUrl = publicUrl.replace(/\/+$/, '');
  try {
    new URL(publicUrl);
  } catch {
    throw new ConfigError(`PUNCTUAL_PUBLIC_URL must be an absolute URL, got "${env.PUNCTUAL_PUBLIC_URL}"`);
  }
  const trustProxy = parseTrustProxy(env.PUNCTUAL_TRUST_PROXY);
  const explicit = CONVENIENCE_VARIABLES.filter((name) => (env[name]?.trim() ?? '') !== '');
  const defaults = developmentDefaults({ production, host, publicUrl, proxyTrusted: trustProxy !== false, explicit });
  return {
    nodeEnv,
    production,
    database,
    redisUrl: env.REDIS_URL?.trim() || null,
    host,
    port,
    publicUrl,
    trustProxy,
    adminToken,
    adminEmail: env.PUNCTUAL_ADMIN_EMAIL?.trim() || 'admin@localhost',
    secretKey,
    allowPrivateWebhooks: parseBoolean('PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS', env.PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS?.trim(), defaults.on),
    devReceiver: parseBoolean('PUNCTUAL_DEV_RECEIVER', env.PUNCTUAL_DEV_RECEIVER?.trim(), defaults.on),
    developmentDefaults: defaults,
    plans: loadPlans(env.PUNCTUAL_PLANS?.trim() || undefined),
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    logFormat: parseLogFormat(env.LOG_FORMAT, production, stdoutIsTerminal),
    deliveryConcurrency: parseIntegerIn('PUNCTUAL_DELIVERY_CONCURRENCY', env.PUNCTUAL_DELIVERY_CONCURRENCY, 256, 1, 10_000),
    // The whole shutdown must fit in 30 s: drain, then abort and record, then close.
    shutdownDrainMs: parseIntegerIn('PUNCTUAL_SHUTDOWN_DRAIN_MS', env.PUNCTUAL_SHUTDOWN_DRAIN_MS, 20_000, 0, 20_000),
    requestTimeoutMs: parseIntegerIn('PUNCTUAL_REQUEST_TIMEOUT_MS', env.PUNCTUAL_REQUEST_TIMEOUT_MS, 30_000, 1_000, 30_000),
    maxConnections: parseIntegerIn('PUNCTUAL_MAX_CONNECTIONS', env.PUNCTUAL_MAX_CONNECTIONS, 10_000, 1, 1_000_000),
    retentionDays: parseRetentionDays(env.PUNCTUAL_RETENTION_DAYS),
    otlpTracing,
    otlpProtocol: parseOtlpProtocol(env, otlpTracing),
  };
}
