import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, type Dispatcher } from 'undici';
import { isBlockedAddress } from './address-guard.js';
import { webhookHeaders } from './signature.js';
import type { TraceContext } from '../tracing/trace-context.js';

/** The response body kept with an attempt. */
export const RESPONSE_BODY_LIMIT = 4096;

export type SendResult =
  | { kind: 'answered'; statusCode: number; responseBody: string; retryAfter: string | undefined; durationMs: number }
  | { kind: 'timeout' | 'network_error'; error: string; durationMs: number }
  /** Cut short by `abort` (the instance is shutting down), not by the receiver. */
  | { kind: 'aborted'; error: string; durationMs: number };

/**
 * A response body as both stores can keep it: invalid UTF-8 is already U+FFFD after decoding, and
 * U+0000, which PostgreSQL text refuses (the attempt could then never be recorded), becomes U+FFFD too.
 */
const keepableText = (text: string): string => text.replaceAll('\u0000', '\ufffd');

/** One webhook request, signed where it is sent (see ThreadedWebhookSender). */
export interface WebhookRequest {
  url: string;
  /** The job's id: `webhook-id`, and part of what is signed. */
  webhookId: string;
  /** Active secrets, newest first: each signs, and the newest goes in Authorization when `bearer`. */
  secrets: string[];
  /**
   * Whether the newest secret also goes as `Authorization: Bearer` (job deliveries, as Dispatched
   * sends them). Never to an events URL, which may be a third party's (SPEC section 10).
   */
  bearer: boolean;
  /** The instant signed as `webhook-timestamp` (application clock, ms). */
  timestampMs: number;
  body: string;
  timeoutMs: number;
  /** The attempt's place in its job's trace, sent as traceparent (and tracestate); none when the job has no trace. */
  trace?: TraceContext | null;
  /**
   * The wall-clock instant (Date.now()) before which the request does not leave. A job is handed
   * over a little ahead of its time and waits here, on the thread that sends it, so the moment it
   * leaves does not depend on how busy the event loop is then.
   */
  sendAt?: number;
}

/** How late the request left after its sendAt, in ms (sent without one: 0). */
export type Sent = SendResult & { lateMs: number };

/**
 * Resolves at `sendAt` by the wall clock, never before it (a timer can fire a hair early), or
 * false as soon as `abort` fires. A request due already goes at once, with no timer or listener.
 */
function waitUntil(sendAt: number, abort?: AbortSignal): Promise<boolean> | boolean {
  if (abort?.aborted) return false;
  if (sendAt <= Date.now()) return true;
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout;
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const check = () => {
      const left = sendAt - Date.now();
      if (left > 0) {
        timer = setTimeout(check, left);
        return;
      }
      abort?.removeEventListener('abort', onAbort);
      resolve(true);
    };
    abort?.addEventListener('abort', onAbort, { once: true });
    check();
  });
}

/** What delivery needs of an HTTP client: one signed request, its outcome, nothing thrown. */
export interface WebhookSender {
  /** Gets ready to send (a thread to start), so that the first delivery does not wait for it. */
  prepare(): void;
  deliver(request: WebhookRequest, abort?: AbortSignal): Promise<Sent>;
  close(): Promise<void>;
}

class BlockedAddressError extends Error {
  readonly code = 'PUNCTUAL_BLOCKED_ADDRESS';
}

/**
 * Resolves like dns.lookup, then refuses blocked addresses. The socket connects to the address
 * returned here, so the address checked is the address used (no DNS rebinding window).
 */
const guardedLookup: LookupFunction = (hostname, options, callback) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const list = addresses as LookupAddress[];
    const blocked = list.find((a) => isBlockedAddress(a.address));
    if (blocked) return callback(new BlockedAddressError(`${hostname} resolves to ${blocked.address}, a private or reserved address`), '', 0);
    if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
    const first = list[0]!;
    callback(null, first.address, first.family);
  });
};

function describe(error: unknown): string {
  const e = error as { code?: string; message?: string; cause?: { code?: string; message?: string } };
  const code = e.cause?.code ?? e.code;
  const message = e.cause?.message ?? e.message ?? String(error);
  return code && !message.includes(code) ? `${code}: ${message}` : message;
}

/**
 * Outbound webhook requests: keep-alive pools per origin (undici), redirects never followed,
 * one deadline for the whole answer, and the private-address guard at connect time.
 */
export class WebhookClient implements WebhookSender {
  private readonly agent: Agent;

  constructor(private readonly options: { allowPrivate: boolean; userAgent: string }) {
    this.agent = new Agent({
      keepAliveTimeout: 30_000,
      connect: options.allowPrivate ? {} : { lookup: guardedLookup },
    });
  }

  prepare(): void {}

  /** Webhook URLs already looked at: a project sends to one, and parsing it for every request costs. */
  private readonly literals = new Map<string, string | null>();

  /** The URL's host when it is an IP literal that is blocked (a literal never goes through lookup), else null. */
  private blockedLiteral(url: string): string | null {
    let blocked = this.literals.get(url);
    if (blocked === undefined) {
      const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
      blocked = isIP(host) && isBlockedAddress(host) ? host : null;
      if (this.literals.size >= 1_000) this.literals.clear();
      this.literals.set(url, blocked);
    }
    return blocked;
  }

  async deliver(request: WebhookRequest, abort?: AbortSignal): Promise<Sent> {
    // Signed before the wait (the signature's timestamp is fixed already): at the due time only the request is left to send.
    const headers = webhookHeaders(request, request.timestampMs);
    if (request.sendAt !== undefined && !(await waitUntil(request.sendAt, abort))) {
      return { kind: 'aborted', error: 'aborted: the instance shut down before the request left', durationMs: 0, lateMs: 0 };
    }
    const lateMs = request.sendAt === undefined ? 0 : Date.now() - request.sendAt;
    return { ...(await this.send(request.url, headers, request.body, request.timeoutMs, abort)), lateMs };
  }

  /** Webhook URLs split for the dispatcher: a project sends to one, and parsing it for every request costs. */
  private readonly targets = new Map<string, { origin: string; path: string }>();

  private targetOf(url: string): { origin: string; path: string } {
    let target = this.targets.get(url);
    if (!target) {
      const parsed = new URL(url);
      target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
      if (this.targets.size >= 1_000) this.targets.clear();
      this.targets.set(url, target);
    }
    return target;
  }

  /**
   * One POST through undici's dispatcher with a handler of our own rather than `request()`, whose
   * body stream, signal and promises cost more than the request itself: 35-45 against 70-85 µs of
   * CPU a request in a microbenchmark of signed deliveries, 100 in flight. One deadline for the
   * whole answer; the first RESPONSE_BODY_LIMIT bytes of the body are kept, and a longer body is
   * cut off (the connection closed) rather than read to its end.
   */
  send(url: string, headers: Record<string, string>, body: string, timeoutMs: number, abort?: AbortSignal): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    if (!this.options.allowPrivate) {
      const blocked = this.blockedLiteral(url);
      if (blocked) return Promise.resolve({ kind: 'network_error', error: `${blocked} is a private or reserved address`, durationMs: elapsed() });
    }
    if (abort?.aborted) return Promise.resolve({ kind: 'aborted', error: 'aborted: the instance shut down before the request left', durationMs: 0 });
    const { origin, path } = this.targetOf(url);
    return new Promise<SendResult>((resolve) => {
      let statusCode = 0;
      let retryAfter: string | undefined;
      const chunks: Buffer[] = [];
      let size = 0;
      let controller: Dispatcher.DispatchController | null = null;
      /** Why we ended it: the deadline, the shutdown, or a body past the limit (then it is answered). */
      let endedBy: 'deadline' | 'shutdown' | 'enough' | null = null;
      let settled = false;
      const finish = (result: SendResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        inFlight?.delete(end);
        resolve(result);
      };
      const answered = (): SendResult => ({
        kind: 'answered',
        statusCode,
        responseBody: keepableText(Buffer.concat(chunks).subarray(0, RESPONSE_BODY_LIMIT).toString('utf8')),
        retryAfter,
        durationMs: elapsed(),
      });
      const end = (why: 'deadline' | 'shutdown' | 'enough') => {
        endedBy ??= why;
        controller?.abort(new Error(`ended: ${why}`));
        // Not dispatched on a socket yet (still connecting): the answer is decided now all the same.
        if (!controller) finish(outcomeOf(why, null));
      };
      const outcomeOf = (why: typeof endedBy, error: Error | null): SendResult => {
        if (why === 'enough') return answered();
        if (why === 'shutdown') return { kind: 'aborted', error: 'aborted: the instance shut down before the answer came', durationMs: elapsed() };
        const code = (error as { code?: string } | null)?.code;
        if (why === 'deadline' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
          return { kind: 'timeout', error: `no complete answer within ${timeoutMs} ms`, durationMs: elapsed() };
        }
        return { kind: 'network_error', error: describe(error), durationMs: elapsed() };
      };
      const timer = setTimeout(() => end('deadline'), timeoutMs);
      const inFlight = abort ? this.abortedBy(abort) : null;
      inFlight?.add(end);
      this.agent.dispatch(
        {
          origin,
          path,
          method: 'POST',
          headers: { ...headers, 'user-agent': this.options.userAgent, 'content-type': 'application/json' },
          body,
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        },
        {
          onRequestStart: (dispatchController) => {
            controller = dispatchController;
            if (endedBy) dispatchController.abort(new Error(`ended: ${endedBy}`));
          },
          onResponseStart: (_controller, status, responseHeaders) => {
            statusCode = status;
            const value = responseHeaders['retry-after'];
            retryAfter = Array.isArray(value) ? value[0] : value;
          },
          onResponseData: (_controller, chunk) => {
            chunks.push(chunk);
            size += chunk.length;
            // The rest is not wanted: ending here closes the connection instead of reading megabytes.
            if (size >= RESPONSE_BODY_LIMIT) end('enough');
          },
          onResponseEnd: () => finish(answered()),
          onResponseError: (_controller, error) => finish(outcomeOf(endedBy, error)),
        },
      );
    });
  }

  /**
   * The requests in flight under a shutdown signal, which one listener of its own aborts together:
   * a listener per request made each removal a search of hundreds (8 % of the thread in bench:e2e).
   */
  private readonly inFlightBySignal = new WeakMap<AbortSignal, Set<(why: 'shutdown') => void>>();

  private abortedBy(signal: AbortSignal): Set<(why: 'shutdown') => void> {
    let ends = this.inFlightBySignal.get(signal);
    if (!ends) {
      const set = new Set<(why: 'shutdown') => void>();
      this.inFlightBySignal.set(signal, (ends = set));
      signal.addEventListener('abort', () => {
        for (const end of set) end('shutdown');
      }, { once: true });
    }
    return ends;
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}
