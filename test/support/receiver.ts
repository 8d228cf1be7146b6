import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { eventually } from './eventually.js';

export interface ReceivedRequest {
  /** Wall-clock arrival (Date.now()) of the request's first byte of headers. */
  arrivedAt: number;
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The JSON body, parsed. */
  json: Record<string, unknown>;
}

/** What to answer; a function of the request so tests can vary by job or attempt. */
export type Reply =
  | { status: number; headers?: Record<string, string>; body?: string; delayMs?: number; held?: Promise<unknown> }
  | { hang: true }
  | { destroy: true };

/**
 * A real webhook receiver on 127.0.0.1:<random port>: it records every request (arrival time,
 * headers, raw body) and answers as the test says: any status, a delay, a hang, a dropped socket.
 */
export class TestReceiver {
  readonly requests: ReceivedRequest[] = [];
  private reply: (request: ReceivedRequest) => Reply = () => ({ status: 200, body: 'ok' });
  private readonly server = createServer((req, res) => void this.handle(req, res));
  private readonly sockets = new Set<Socket>();
  inFlight = 0;
  /** The most requests in flight at once, per request path. */
  readonly maxInFlightByPath = new Map<string, number>();
  private readonly inFlightByPath = new Map<string, number>();
  url = '';

  async start(): Promise<this> {
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }

  answer(reply: Reply | ((request: ReceivedRequest) => Reply)): void {
    this.reply = typeof reply === 'function' ? reply : () => reply;
  }

  forJob(jobId: string): ReceivedRequest[] {
    return this.requests.filter((r) => r.json.jobId === jobId);
  }

  /** Polls until `predicate` holds, failing after `timeoutMs`. */
  async waitFor(predicate: () => boolean, timeoutMs = 10_000, what = 'the receiver'): Promise<void> {
    await eventually(() => predicate() || `${this.requests.length} requests so far`, { what, until: (held) => held === true, withinMs: timeoutMs });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrivedAt = Date.now();
    this.inFlight += 1;
    const path = req.url!;
    const now = (this.inFlightByPath.get(path) ?? 0) + 1;
    this.inFlightByPath.set(path, now);
    this.maxInFlightByPath.set(path, Math.max(now, this.maxInFlightByPath.get(path) ?? 0));
    const done = () => {
      this.inFlight -= 1;
      this.inFlightByPath.set(path, (this.inFlightByPath.get(path) ?? 1) - 1);
    };
    let body = '';
    for await (const chunk of req) body += chunk;
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(body) as Record<string, unknown>;
    } catch {
      // recorded as is
    }
    const request: ReceivedRequest = { arrivedAt, method: req.method!, url: req.url!, headers: req.headers, body, json };
    this.requests.push(request);
    const reply = this.reply(request);
    if ('hang' in reply) {
      res.on('close', done);
      return;
    }
    if ('destroy' in reply) {
      done();
      req.socket.destroy();
      return;
    }
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    // Answers when the test says so (a late answer to a worker that lost its lease, say).
    if (reply.held) await reply.held;
    done();
    res.writeHead(reply.status, reply.headers ?? {});
    res.end(reply.body ?? '');
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
