import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectContractErrorShape } from '../support/contract-error.js';
import { openSnapshotter, type DatabaseSnapshotter } from '../support/database-snapshot.js';
import { ADMIN_TOKEN, makeTestApp, TEST_STORE, type TestApp, type TestProject } from '../support/make-app.js';

/**
 * SPEC section 5: "A request that fails validation changes nothing". fast-check generates
 * requests that are wrong by construction (each generator says why) to every endpoint of section 2
 * and of the management API; each must answer a 4xx in the contract's shape within a deadline,
 * and leave every table exactly as it was. RUNS_PER_PROPERTY sizes the run; the total is printed.
 */
// 1,400 runs per property make 10,500 requests: ~30 s on SQLite, longer on PostgreSQL, whose
// snapshots cost a round trip each. The floor is the issue's, whatever FUZZ_RUNS says.
const RUNS_PER_PROPERTY = Number(process.env.FUZZ_RUNS ?? 1_400);
const MIN_REQUESTS = 10_000;
const ANSWER_DEADLINE_MS = 5_000;
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

/** Header values are bytes on the wire: light-my-request refuses what Node would (CR, LF, NUL, > U+00FF). */
const isSendableHeaderValue = (value: string) => [...value].every((c) => c.charCodeAt(0) <= 0xff && c !== '\r' && c !== '\n' && c !== '\u0000');

/** A request as generated: which endpoint, and the request itself. */
interface FuzzRequest {
  endpoint: string;
  options: InjectOptions;
}

const json = (value: unknown) => JSON.stringify(value);

/** fc.assert, with its report cut short: a counterexample can be a 64 KiB body. */
async function assertProperty<T>(arbitrary: fc.Arbitrary<T>, check: (value: T) => Promise<void>, numRuns: number): Promise<void> {
  const details = await fc.check(fc.asyncProperty(arbitrary, check), { numRuns, seed: SEED, endOnFailure: true });
  if (!details.failed) return;
  const counterexample = JSON.stringify(details.counterexample) ?? '';
  const cause = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(`seed ${SEED}, path ${details.counterexamplePath}: ${cause.slice(0, 1_500)}\ncounterexample: ${counterexample.slice(0, 1_500)}`);
}

/** Strings that stress parsers and databases: NUL, lone surrogates, BOMs, RTL marks, long runs. */
const edgyString = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '\udfff', 'x\ud83d', '\ufeff', '\u202e', '\uffff', '%00', '../../etc/passwd', "'; DROP TABLE jobs; --", '$1'),
  fc.string({ unit: 'grapheme', maxLength: 200 }),
);

/** JSON values of every type, including huge numbers (1e308) and the edgy strings. */
const anyJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, -1, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 0.5, -0),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    edgyString,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(edgyString, tie('value'), { maxKeys: 4 }),
  ),
})).value;

/** Anything but a JSON object. */
const notAnObject = fc.oneof(fc.constantFrom(null, true, false, 0, 1e308, '', '{}', []), fc.double(), edgyString, fc.array(anyJson, { maxLength: 3 }));

/** Tags that are wrong: not an object, an eleventh entry, a key outside [A-Za-z0-9_.:-]{1,64}, a value not a string of 1 to 256 characters. */
const badTags = fc.oneof(
  notAnObject.filter((value) => typeof value !== 'object' || value === null || Array.isArray(value)),
  fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), fc.constant('v'), { minKeys: 11, maxKeys: 14 }),
  fc.tuple(edgyString.filter((key) => !/^[A-Za-z0-9_.:-]{1,64}$/.test(key)), fc.constant('v')).map(([key, value]) => ({ [key]: value })),
  fc.oneof(anyJson.filter((value) => typeof value !== 'string'), fc.constant(''), fc.string({ minLength: 257, maxLength: 300 }).filter((s) => [...s].length > 256)).map((value) => ({ order: value })),
);

/** Anything but null or an RFC 3339 timestamp with a zone inside the window. */
const badSchedule = fc.oneof(
  fc.constantFrom(
    '2027-02-30T00:00:00Z',
    '2027-01-01T25:00:00Z',
    '2027-01-01T00:00:60Z',
    '2027-01-01T00:00:00',
    '2027-01-01',
    '2027-01-01T00:00:00+24:00',
    '2027-01-01T00:00:00+05:60',
    '9999-12-31T23:59:59Z',
    '+275760-09-13T00:00:00Z',
    '2027-01-01T00:00:00.\u0000Z',
    '2027-01-01T00:00:00Z\ud800',
    '',
  ),
  fc.string({ unit: 'binary', maxLength: 40 }).filter((s) => !/^\d{4}-\d\d-\d\d[Tt]/.test(s)),
  // NaN and ±Infinity would go out as null, which is a valid schedule.
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.array(anyJson, { maxLength: 2 }),
  fc.dictionary(fc.string(), anyJson, { maxKeys: 2 }),
);

const badMaxRetries = fc.oneof(
  fc.constantFrom('3', '0', -1, 0.5, -1e308, null, true, [], {}),
  fc.double().filter((d) => !Number.isInteger(d) || d < 0),
  fc.integer({ max: -1 }),
  edgyString,
);

/** A dispatch body wrong by construction, as a JSON value. */
const badDispatchValue = fc.oneof(
  notAnObject,
  fc.record({ payload: notAnObject }),
  fc.record({ scheduledFor: anyJson }).map((body) => ({ ...body })), // payload missing
  fc.record({ payload: fc.dictionary(edgyString, anyJson, { maxKeys: 3 }), scheduledFor: badSchedule }),
  fc.record({ payload: fc.dictionary(edgyString, anyJson, { maxKeys: 3 }), scheduleFor: badSchedule }),
  fc.record({ payload: fc.constant({}), scheduledFor: fc.constant(null), scheduleFor: fc.constant(null) }),
  fc.record({ payload: fc.dictionary(edgyString, anyJson, { maxKeys: 3 }), maxRetries: badMaxRetries }),
  // Over 10,240 bytes once serialised.
  fc.record({ payload: fc.string({ minLength: 10_300, maxLength: 12_000 }).map((s) => ({ big: s })) }),
  // Tags (SPEC section 14): not an object of at most 10 entries with valid keys and string values of 1 to 256 characters.
  fc.record({ payload: fc.constant({}), tags: badTags }),
);

/** A body text that is not a JSON value at all, or not one the endpoint can take. */
function malformedText(valid: string): fc.Arbitrary<string> {
  return fc.oneof(
    // Truncated: a strict prefix of an object's text is never valid JSON.
    fc.nat({ max: valid.length - 1 }).map((n) => valid.slice(0, n)),
    fc.constantFrom('{', '{"payload":', "{'payload': {}}", '{"payload": {},}', '{"payload": NaN}', '{"payload": {"a": 1e999999}', '\ufeff{"payload":{}}', 'nul', '{"payload": {"a": "\\ud800"', '{"payload": {"a":"\\u0000"}}}'),
    fc.string({ unit: 'binary', maxLength: 60 }).filter((s) => {
      try {
        JSON.parse(s);
        return false;
      } catch {
        return true;
      }
    }),
  );
}

/** Nesting far deeper than any sane payload; the body stays under the 64 KiB limit. */
const deepNesting = fc.integer({ min: 5_000, max: 32_000 }).chain((depth) =>
  fc.constantFrom(
    `{"payload":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`,
    `{"payload":${'{"a":'.repeat(Math.floor(depth / 3))}1${'}'.repeat(Math.floor(depth / 3))}}`,
  ),
);

/** Duplicate keys: JSON.parse keeps the last, so the last one is the invalid one. */
const duplicateKeys = fc.constantFrom(
  '{"payload": {}, "payload": 5}',
  '{"payload": {}, "payload": null}',
  '{"payload": {}, "maxRetries": 1, "maxRetries": "1"}',
  '{"payload": {}, "scheduledFor": null, "scheduledFor": "tomorrow"}',
);

describe('bad input changes nothing (fast-check fuzzer)', () => {
  let t: TestApp;
  let p: TestProject;
  let other: TestProject;
  let snapshotter: DatabaseSnapshotter;
  let queuedJobId: string;
  let cancelledJobId: string;
  let requestsSent = 0;
  const statusCounts = new Map<number, number>();

  beforeAll(async () => {
    t = await makeTestApp();
    p = await t.makeProject();
    other = await t.makeProject();
    const queued = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { fixture: 'queued' }, scheduledFor: '2027-06-01T00:00:00Z' } });
    queuedJobId = queued.json().jobId;
    const cancelled = await t.api(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: { payload: { fixture: 'cancelled' } } });
    cancelledJobId = cancelled.json().jobId;
    expect((await t.api(p.key, { method: 'DELETE', url: `/api/jobs/${cancelledJobId}` })).statusCode).toBe(200);
    snapshotter = await openSnapshotter(t.databaseUrl);
  });
  afterAll(async () => {
    const statuses = [...statusCounts].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`).join(' ');
    console.log(`[fuzzer ${TEST_STORE}] seed ${SEED}: ${requestsSent} generated requests; answers ${statuses}`);
    await snapshotter?.close();
    await t?.close();
  });

  async function send(options: InjectOptions): Promise<LightMyRequestResponse> {
    requestsSent += 1;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_DEADLINE_MS} ms`)), ANSWER_DEADLINE_MS);
    });
    try {
      return await Promise.race([t.app.inject(options), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The property every generated request must have: a 4xx in the contract's shape, and no change. */
  async function expectRefusedWithoutChange(request: FuzzRequest): Promise<void> {
    const before = await snapshotter.snapshot();
    const res = await send(request.options);
    statusCounts.set(res.statusCode, (statusCounts.get(res.statusCode) ?? 0) + 1);
    const what = `${request.endpoint}: ${request.options.method} ${request.options.url} ${String(request.options.payload ?? '').slice(0, 300)}`;
    expect(res.statusCode, `${what}\n→ ${res.body.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
    expect(res.statusCode, `${what}\n→ ${res.body.slice(0, 300)}`).toBeLessThan(500);
    expectContractErrorShape(res);
    expect(await snapshotter.snapshot(), what).toEqual(before);
  }

  const run = (arbitrary: fc.Arbitrary<FuzzRequest>, runs = RUNS_PER_PROPERTY) => assertProperty(arbitrary, expectRefusedWithoutChange, runs);

  const withKey = (key: string, options: InjectOptions): InjectOptions => ({
    ...options,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...options.headers },
  });
  const asAdmin = (options: InjectOptions) => withKey(ADMIN_TOKEN, options);
  /** Job ids: malformed, unknown, another project's, or this project's in a state that refuses the call. */
  const jobIds = () => fc.oneof(fc.constantFrom('job_', 'job_%00', '%ED%A0%80', 'job_' + 'A'.repeat(300), 'job_doesnotexist000000'), fc.string({ unit: 'binary', maxLength: 30 }).map(encodeURIComponent));

  it('job API: malformed, truncated, mistyped, deeply nested, duplicate-keyed and oversized bodies', { timeout: 600_000 }, async () => {
    const validDispatch = json({ payload: { hello: 'world' }, scheduledFor: '2027-03-01T00:00:00Z', maxRetries: 1 });
    const body = fc.oneof(
      { weight: 4, arbitrary: badDispatchValue.map((value) => json(value) ?? 'undefined') },
      { weight: 2, arbitrary: malformedText(validDispatch) },
      { weight: 1, arbitrary: deepNesting },
      { weight: 1, arbitrary: duplicateKeys },
      { weight: 1, arbitrary: fc.constantFrom('{"payload":{}, "maxRetries": 1e400}', '{"payload":{}, "maxRetries": 1E+309}', '{"payload":{}, "maxRetries": -0.0000001}') },
      // Over the 64 KiB body limit: refused before parsing.
      { weight: 1, arbitrary: fc.integer({ min: 65_537, max: 70_000 }).map((n) => `{"payload":{"a":"${'x'.repeat(n)}"}}`) },
    );
    const dispatch = body.map((payload) => ({ endpoint: 'dispatch', options: withKey(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload }) }));
    const batch = fc.oneof(
      // A bad envelope: not an object, no jobs array, none, or more than 100.
      fc.oneof(notAnObject, fc.record({ jobs: notAnObject.filter((jobs) => !Array.isArray(jobs)) }), fc.constant({ jobs: [] }), fc.constant({ jobs: Array.from({ length: 101 }, () => ({ payload: {} })) })).map(json),
      malformedText(json({ jobs: [{ payload: {} }] })),
    ).map((payload) => ({ endpoint: 'batch', options: withKey(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload }) }));
    const reschedule = fc
      .tuple(
        fc.oneof(fc.constant(queuedJobId), fc.constant(cancelledJobId), jobIds()),
        fc.oneof(
          fc.record({ scheduledFor: badSchedule }).map(json),
          fc.constant('{}'),
          fc.constant(''),
          fc.constant('{"scheduledFor": null, "scheduleFor": null}'),
          malformedText(json({ scheduledFor: '2027-03-01T00:00:00Z' })),
        ),
      )
      .map(([id, payload]) => ({ endpoint: 'reschedule', options: withKey(p.key, { method: 'PATCH', url: `/api/jobs/${id}`, payload }) }));
    const idCalls = fc
      .tuple(fc.oneof(fc.constant(cancelledJobId), jobIds()), fc.constantFrom('GET', 'DELETE', 'GET attempts', 'POST retry'))
      .filter(([id, call]) => !(id === cancelledJobId && call.startsWith('GET')))
      .map(([id, call]) => {
        const [method, suffix] = call.split(' ') as ['GET' | 'DELETE' | 'POST', string | undefined];
        return { endpoint: call, options: withKey(p.key, { method, url: `/api/jobs/${id}${suffix ? `/${suffix}` : ''}` }) };
      });
    const list = fc
      .record(
        {
          status: fc.oneof(edgyString, fc.constantFrom('queued', 'DONE', 'QUEUED,FAILED')).filter((s) => !['QUEUED', 'DISPATCHED', 'STARTED', 'COMPLETED', 'FAILED', 'CANCELLED'].includes(s)),
          limit: fc.oneof(fc.constantFrom('0', '101', '-1', '1.5', '1e2', 'ten', '', '99999999999999999999'), fc.string()).filter((s) => !(/^\d{1,3}$/.test(s) && Number(s) >= 1 && Number(s) <= 100)),
          // A real cursor is base64url of "s<sequence>" (or "c<createdAt>s<sequence>", a list's by
          // creation window or schedule); anything else must be refused.
          cursor: fc
            .oneof(fc.constantFrom('', 's1', 'AAAA', '%00', 'czA', 'czE=', 'czE ', 'YzFzMA', 'YzAxczE'), fc.base64String({ maxLength: 20 }), edgyString)
            .filter((cursor) => !/^(c(0|[1-9]\d{0,15}))?s[1-9]\d{0,15}$/.test(Buffer.from(cursor, 'base64url').toString('utf8')) || cursor.includes('=')),
        },
        { requiredKeys: [] },
      )
      .filter((query) => Object.keys(query).length > 0)
      .map((query) => ({ endpoint: 'list', options: withKey(p.key, { method: 'GET', url: '/api/jobs', query }) }));
    // A timestamp without a zone, impossible, or not one at all (SPEC section 2's list filters).
    const badTimestamp = fc.oneof(
      fc.constantFrom('2027-01-05T09:30:00', '2027-02-30T00:00:00Z', '2027-01-05', '1767000000000', 'now', '', '2027-01-05T24:00:00Z'),
      edgyString.filter((s) => !/^\d{4}-\d\d-\d\dT/.test(s)),
    );
    const listRange = fc
      .tuple(fc.constantFrom('createdAfter', 'createdBefore'), badTimestamp)
      .map(([name, value]) => ({ endpoint: 'list range', options: withKey(p.key, { method: 'GET', url: '/api/jobs', query: { [name]: value } }) }));
    // Bulk replay: only FAILED, a limit of 1..10,000, timestamps; a wrong one changes nothing.
    const replay = fc
      .oneof(
        fc.record({ status: fc.oneof(fc.constantFrom('failed', 'QUEUED', '', null, 1), edgyString.filter((s) => s !== 'FAILED')) }),
        fc.record({ status: fc.constant('FAILED'), limit: fc.oneof(fc.constantFrom(0, -1, 10_001, 1.5, '10', null, 1e308), edgyString) }),
        fc.record({ status: fc.constant('FAILED'), failedAfter: fc.oneof(badTimestamp.filter((s) => s !== ''), fc.constantFrom(0, true, {})) }),
        fc.record({ status: fc.constant('FAILED'), failedBefore: fc.oneof(badTimestamp.filter((s) => s !== ''), fc.constantFrom(0, true, {})) }),
        notAnObject,
      )
      .map((body) => ({ endpoint: 'bulk replay', options: withKey(p.key, { method: 'POST', url: '/api/jobs/retry', payload: json(body) }) }));
    // Bulk actions (SPEC section 14): every one of these is refused and changes nothing, however it is wrong.
    const goodFilter = { tags: { fixture: 'x' } };
    const bulk = fc
      .oneof(
        fc.record({ action: fc.oneof(fc.constantFrom('CANCEL', 'delete', '', null, 1), edgyString.filter((a) => !['cancel', 'reschedule', 'retry'].includes(a))), filter: fc.constant(goodFilter) }),
        fc.record({ action: fc.constantFrom('cancel', 'retry'), filter: fc.oneof(notAnObject, fc.constant({}), fc.constant({ tags: {} })) }),
        fc.record({ action: fc.constantFrom('cancel', 'retry') }),
        fc.record({ action: fc.constant('cancel'), filter: fc.tuple(edgyString.filter((name) => !['status', 'tags', 'scheduleId', 'createdAfter', 'createdBefore', 'dueAfter', 'dueBefore'].includes(name)), anyJson).map(([name, value]) => ({ ...goodFilter, [name]: value })) }),
        fc.record({ action: fc.constant('cancel'), filter: badTags.map((tags) => ({ tags })) }),
        fc.record({ action: fc.constant('cancel'), filter: fc.tuple(fc.constantFrom('createdAfter', 'createdBefore', 'dueAfter', 'dueBefore'), badTimestamp.filter((s) => s !== '')).map(([name, value]) => ({ [name]: value })) }),
        fc.record({ action: fc.constant('cancel'), filter: fc.constant(goodFilter), limit: fc.oneof(fc.constantFrom(0, -1, 10_001, 1.5, '10', null, 1e308), edgyString) }),
        fc.record({ action: fc.constant('cancel'), filter: fc.constant(goodFilter), dryRun: fc.oneof(fc.constantFrom('true', 1, 0, null), edgyString) }),
        fc.record({ action: fc.constant('reschedule'), filter: fc.constant(goodFilter), scheduledFor: badSchedule }),
        fc.record({ action: fc.constant('reschedule'), filter: fc.constant(goodFilter) }),
        fc.record({ action: fc.constantFrom('cancel', 'retry'), filter: fc.constant(goodFilter), scheduledFor: fc.constant(null) }),
        notAnObject,
      )
      .map((body) => ({ endpoint: 'bulk', options: withKey(p.key, { method: 'POST', url: '/api/jobs/bulk', payload: json(body) }) }));
    const listTag = fc
      .oneof(
        fc.oneof(edgyString.filter((tag) => !/^[A-Za-z0-9_.-]{1,64}:[^]/.test(tag)), fc.constantFrom('order', ':1', 'order:', 'a b:1')),
        fc.array(fc.constant('k:v'), { minLength: 11, maxLength: 13 }),
      )
      .map((tag) => ({ endpoint: 'list tag', options: withKey(p.key, { method: 'GET', url: '/api/jobs', query: { tag } }) }));
    // Async completion reports (SPEC section 11): a wrong outcome or error, on an attempt that does not wait for one.
    const reports = fc
      .tuple(
        fc.oneof(
          fc.record({ outcome: fc.oneof(fc.constantFrom('SUCCESS', 'done', 'timeout', '', null, 1, true), edgyString.filter((s) => !['success', 'failure', 'running'].includes(s))) }),
          fc.record({ outcome: fc.constant('failure'), error: fc.oneof(fc.constantFrom(1, true, {}, []), fc.string({ minLength: 1_001, maxLength: 1_100 })) }),
          fc.record({ outcome: fc.constantFrom('success', 'running'), error: fc.string({ minLength: 1, maxLength: 20 }) }),
          fc.constantFrom({ outcome: 'success' }, { outcome: 'failure', error: 'x' }, { outcome: 'running' }),
          notAnObject,
        ),
        fc.oneof(fc.constantFrom('att_nope', '%00', 'att_' + 'A'.repeat(300)), fc.string({ unit: 'binary', maxLength: 30 }).map(encodeURIComponent)),
      )
      .map(([body, attemptId]) => ({ endpoint: 'report', options: withKey(p.key, { method: 'POST', url: `/api/jobs/${queuedJobId}/attempts/${attemptId}/result`, payload: json(body) }) }));
    const mediaTypes = fc
      .tuple(fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', 'multipart/form-data', 'application/jsonx', 'json'), fc.constantFrom('/api/jobs/dispatch', '/api/jobs/dispatch/batch'))
      .map(([contentType, url]) => ({ endpoint: 'media type', options: withKey(p.key, { method: 'POST', url, payload: validDispatch, headers: { 'content-type': contentType } }) }));
    const idempotencyKeys = fc
      .oneof(fc.constant(''), fc.string({ minLength: 256, maxLength: 300 }), fc.string({ unit: 'binary', minLength: 1, maxLength: 20 }).filter((s) => !/^[\x20-\x7e]+$/.test(s)))
      .filter(isSendableHeaderValue)
      .map((key) => ({ endpoint: 'idempotency key', options: withKey(p.key, { method: 'POST', url: '/api/jobs/dispatch', payload: validDispatch, headers: { 'idempotency-key': key } }) }));
    const unauthenticated = fc
      .tuple(
        fc.oneof(
          fc.constant(undefined),
          fc.constantFrom('Bearer', 'Bearer ', `Bearer ${p.key}x`, `Bearer ${p.key.slice(0, -1)}`, `Basic ${p.key}`, `Bearer ${ADMIN_TOKEN}`, `Bearer pcb_${'A'.repeat(43)}`),
          fc.string().map((s) => `Bearer pk_${s}`).filter(isSendableHeaderValue),
          fc.base64String({ minLength: 40, maxLength: 48 }).map((s) => `Bearer pcb_${s.replace(/[+/=]/g, '_')}`),
        ),
        fc.constantFrom(
          '/api/jobs/dispatch',
          '/api/jobs/dispatch/batch',
          '/api/jobs',
          `/api/jobs/${queuedJobId}`,
          `/api/jobs/${queuedJobId}/attempts`,
          `/api/jobs/${queuedJobId}/retry`,
          `/api/jobs/${queuedJobId}/attempts/att_nope/result`,
          '/api/nope',
        ),
        fc.constantFrom('GET', 'POST', 'PATCH', 'DELETE'),
      )
      .map(([authorization, url, method]) => ({
        endpoint: 'unauthenticated',
        options: { method, url, headers: authorization === undefined ? {} : { authorization }, payload: method === 'GET' ? undefined : validDispatch } as InjectOptions,
      }));
    await run(fc.oneof(dispatch, batch, reschedule, idCalls, list, listRange, replay, bulk, listTag, reports, mediaTypes, idempotencyKeys, unauthenticated), RUNS_PER_PROPERTY * 4);
  });

  it('batch: every item wrong answers 200 with an error per item in request order, and stores nothing', { timeout: 300_000 }, async () => {
    await assertProperty(
      fc.array(badDispatchValue, { minLength: 1, maxLength: 20 }),
      async (items) => {
        const before = await snapshotter.snapshot();
        const res = await send(withKey(p.key, { method: 'POST', url: '/api/jobs/dispatch/batch', payload: json({ jobs: items }) }));
        statusCounts.set(res.statusCode, (statusCounts.get(res.statusCode) ?? 0) + 1);
        expect(res.statusCode, res.body.slice(0, 300)).toBe(200);
        const answers = res.json().jobs as { error?: string; data?: { message?: string } }[];
        expect(answers).toHaveLength(items.length);
        for (const answer of answers) expect(answer).toMatchObject({ error: expect.stringMatching(/^[A-Z_]+$/), data: { message: expect.any(String) } });
        expect(await snapshotter.snapshot()).toEqual(before);
      },
      Math.ceil(RUNS_PER_PROPERTY / 4),
    );
  });

  it('management API: wrong types, out-of-range settings, unknown plans, bad URLs, unknown ids, no admin token', { timeout: 600_000 }, async () => {
    const knownPlans = new Set(Object.keys(t.runtime.config.plans));
    const badPlan = edgyString.filter((plan) => !knownPlans.has(plan));
    const unknownIds = fc.oneof(fc.constantFrom('team_nope', 'prj_nope', 'key_nope', '%00', '%ED%A0%80'), fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent));
    const badName = fc.oneof(fc.constantFrom(null, 0, true, [], {}, '', '   ', 'a\u0000b', '\ud800', 'x'.repeat(10_000)), fc.double());
    const badUrl = fc.oneof(fc.constantFrom('', 'ftp://example.com/', 'javascript:alert(1)', '//example.com/', 'http://', 'not a url', 'http://exa mple.com/', 0, true, {}), edgyString.filter((s) => !/^https?:\/\/[^\s/]+/i.test(s)));
    const badProjectPatch = fc.oneof(
      fc.record({ deliveryTimeoutMs: fc.oneof(fc.integer({ max: 999 }), fc.integer({ min: 300_001 }), fc.double().filter((d) => !Number.isInteger(d)), fc.constantFrom('30000', null)) }),
      fc.record({ deliveryConcurrency: fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 1001 }), fc.constantFrom('5', 1.5, null, 1e308)) }),
      fc.record({ acceptAny2xx: fc.oneof(fc.constantFrom('true', 1, 0, null), edgyString) }),
      fc.record({ webhookUrl: badUrl }),
      fc.record({ name: badName }),
      fc.record({ paused: fc.oneof(fc.constantFrom('true', 1, 0, null), edgyString) }),
      fc.record({ asyncCompletion: fc.oneof(fc.constantFrom('true', 1, 0, null), edgyString) }),
      fc.record({ asyncCompletionTimeoutMs: fc.oneof(fc.integer({ max: 999 }), fc.integer({ min: 604_800_001 }), fc.constantFrom('60000', null, 1.5, 1e308)) }),
      fc.record({ eventsUrl: badUrl }),
      fc.record({ eventsFormat: fc.oneof(fc.constantFrom('JSON', 'Slack', '', null, 1), edgyString.filter((s) => s !== 'json' && s !== 'slack')) }),
      fc.record({ retryPolicy: fc.oneof(notAnObject, fc.record({ factor: fc.oneof(fc.constantFrom('4', null, -1, 0, 1e308), edgyString) }, { requiredKeys: ['factor'] }), fc.record({ maxRetries: fc.constantFrom(-1, 4, 99, '3', 1.5) }), fc.record({ initialDelayMs: fc.constantFrom(-1, '30000', 1.5, 1e308) }), fc.record({ maxDelayMs: fc.constantFrom(-1, 'x', 1.5, 1e308) })) }),
    ).map(json);
    const requests: fc.Arbitrary<FuzzRequest>[] = [
      fc.oneof(fc.record({ name: badName }), fc.record({ name: fc.constant('ok'), plan: badPlan }), notAnObject, fc.constant({})).map((body) => ({ endpoint: 'create team', options: asAdmin({ method: 'POST', url: '/manage/v1/teams', payload: json(body) }) })),
      fc.oneof(fc.record({ name: badName }), fc.record({ plan: badPlan }), notAnObject).map((body) => ({ endpoint: 'update team', options: asAdmin({ method: 'PATCH', url: `/manage/v1/teams/${p.teamId}`, payload: json(body) }) })),
      fc.oneof(fc.record({ name: badName }), fc.record({ name: fc.constant('ok'), webhookUrl: badUrl }), notAnObject, fc.constant({})).map((body) => ({ endpoint: 'create project', options: asAdmin({ method: 'POST', url: `/manage/v1/teams/${p.teamId}/projects`, payload: json(body) }) })),
      badProjectPatch.map((payload) => ({ endpoint: 'update project', options: asAdmin({ method: 'PATCH', url: `/manage/v1/projects/${p.projectId}`, payload }) })),
      fc.oneof(fc.record({ name: badName }), notAnObject, fc.constant({})).map((body) => ({ endpoint: 'create key', options: asAdmin({ method: 'POST', url: `/manage/v1/projects/${p.projectId}/keys`, payload: json(body) }) })),
      fc.tuple(fc.constantFrom('POST /manage/v1/teams', `PATCH /manage/v1/teams/${p.teamId}`, `PATCH /manage/v1/projects/${p.projectId}`, `POST /manage/v1/projects/${p.projectId}/keys`), malformedText(json({ name: 'ok' }))).map(([route, payload]) => {
        const [method, url] = route.split(' ') as ['POST' | 'PATCH', string];
        return { endpoint: 'malformed management body', options: asAdmin({ method, url, payload }) };
      }),
      fc
        .tuple(unknownIds, fc.constantFrom('GET /manage/v1/teams/:id', 'PATCH /manage/v1/teams/:id', 'GET /manage/v1/teams/:id/projects', 'POST /manage/v1/teams/:id/projects', 'GET /manage/v1/teams/:id/usage', 'GET /manage/v1/projects/:id', 'PATCH /manage/v1/projects/:id', 'GET /manage/v1/projects/:id/keys', 'POST /manage/v1/projects/:id/keys', 'GET /manage/v1/projects/:id/webhook-secrets', 'POST /manage/v1/projects/:id/webhook-secret/rotate', 'POST /manage/v1/projects/:id/test-delivery', 'GET /manage/v1/projects/:id/events', 'DELETE /manage/v1/keys/:id'))
        .map(([id, route]) => {
          const [method, path] = route.split(' ') as ['GET' | 'POST' | 'PATCH' | 'DELETE', string];
          return { endpoint: 'unknown id', options: asAdmin({ method, url: path.replace(':id', id), payload: method === 'GET' || method === 'DELETE' ? undefined : json({ name: 'x' }) }) };
        }),
      fc
        .tuple(fc.constantFrom(undefined, `Bearer ${p.key}`, `Bearer ${other.key}`, `Bearer ${ADMIN_TOKEN}x`, 'Bearer', `Basic ${ADMIN_TOKEN}`), fc.constantFrom('POST /manage/v1/teams', `GET /manage/v1/teams/${p.teamId}`, `PATCH /manage/v1/projects/${p.projectId}`, `POST /manage/v1/projects/${p.projectId}/keys`, `POST /manage/v1/projects/${p.projectId}/webhook-secret/rotate`, 'DELETE /manage/v1/keys/x', '/manage/nope'))
        .map(([authorization, route]) => {
          const [method, url] = route.includes(' ') ? (route.split(' ') as ['GET' | 'POST' | 'PATCH' | 'DELETE', string]) : (['GET', route] as const);
          return { endpoint: 'management without the admin token', options: { method, url, headers: authorization ? { authorization } : {}, payload: method === 'GET' || method === 'DELETE' ? undefined : json({ name: 'x' }) } as InjectOptions };
        }),
    ];
    await run(fc.oneof(...requests), RUNS_PER_PROPERTY * 3);
  });

  it('over a real socket: oversized headers, malformed HTTP and header injection get a 4xx and change nothing', { timeout: 300_000 }, async () => {
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = t.app.server.address() as AddressInfo;
    const raw = (text: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1');
        let answer = '';
        const timer = setTimeout(() => {
          socket.destroy();
          reject(new Error(`no answer within ${ANSWER_DEADLINE_MS} ms to ${JSON.stringify(text.slice(0, 200))}`));
        }, ANSWER_DEADLINE_MS);
        socket.on('data', (chunk) => {
          answer += chunk.toString('latin1');
          // One answer is enough: a keep-alive connection would otherwise stay open.
          const head = answer.indexOf('\r\n\r\n');
          const length = /content-length: *(\d+)/i.exec(answer);
          if (head >= 0 && length && answer.length >= head + 4 + Number(length[1])) socket.end();
        });
        socket.on('error', () => {});
        socket.on('close', () => {
          clearTimeout(timer);
          resolve(answer);
        });
        socket.end(text, 'latin1');
      });
    const body = json({ payload: { ok: true } });
    const auth = `Authorization: Bearer ${p.key}\r\n`;
    const requestText = fc.oneof(
      fc.integer({ min: 17_000, max: 80_000 }).map((n) => `GET /api/jobs HTTP/1.1\r\nHost: x\r\n${auth}X-Big: ${'a'.repeat(n)}\r\n\r\n`),
      // Many headers adding up to more than Node's 16 KiB header limit.
      fc.integer({ min: 170, max: 2_000 }).map((n) => `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}${Array.from({ length: n }, (_, i) => `X-H${i}: ${'v'.repeat(100)}`).join('\r\n')}\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
      fc.constantFrom(
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Idempotency-Key: a\rInjected: 1\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Idempotency-Key: a\nInjected: 1\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Idempotency-Key: a\u0000b\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${body.length}\r\nContent-Length: ${body.length + 1}\r\n\r\n${body}`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: -1\r\n\r\n${body}`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked\r\n\r\nzz\r\n${body}\r\n0\r\n\r\n`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${body.length + 50}\r\n\r\n${body}`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: ${body.length - 3}\r\n\r\n${body}`,
        `POST /api/jobs/dispatch HTTP/9.9\r\nHost: x\r\n${auth}\r\n`,
        `POST  /api/jobs/dispatch HTTP/1.1\r\n\r\n`,
        `GET /api/jobs/\u00ff\u0000 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`,
        `G\u0000T /api/jobs HTTP/1.1\r\nHost: x\r\n\r\n`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\n Authorization: Bearer ${p.key}\r\n\r\n`,
        `POST /api/jobs/dispatch HTTP/1.1\r\nHost: x\r\nAuthorization : Bearer ${p.key}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        '\r\n\r\n\r\n',
        'HELLO\r\n\r\n',
      ),
      fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 300 }).map((s) => `${s}\r\n\r\n`),
    );
    let socketRequests = 0;
    await assertProperty(
      requestText,
      async (text) => {
        socketRequests += 1;
        requestsSent += 1;
        const before = await snapshotter.snapshot();
        const answer = await raw(text);
        const what = JSON.stringify(text.slice(0, 200));
        // A socket closed without a byte is a refusal too (Node drops what it cannot parse at all).
        if (answer !== '') {
          const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1]);
          statusCounts.set(status, (statusCounts.get(status) ?? 0) + 1);
          expect(status, `${what}\n→ ${answer.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
          expect(status, `${what}\n→ ${answer.slice(0, 300)}`).toBeLessThan(500);
          const [head, ...rest] = answer.split('\r\n\r\n');
          const headers = Object.fromEntries(head!.split('\r\n').slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
          expectContractErrorShape({ headers, body: rest.join('\r\n\r\n') });
        }
        expect(await snapshotter.snapshot(), what).toEqual(before);
      },
      Math.ceil(RUNS_PER_PROPERTY / 4),
    );
    expect(socketRequests).toBeGreaterThan(0);
  });

  it(`sent at least ${MIN_REQUESTS} generated requests`, () => {
    expect(requestsSent).toBeGreaterThanOrEqual(MIN_REQUESTS);
  });
});
