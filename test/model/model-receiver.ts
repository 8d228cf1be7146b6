import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Clock } from '../../src/clock.js';

/** How a project's receiver answers, as the model's commands set it. */
export type ReceiverMode =
  | 'ok' // 200
  | 'fail' // 500
  | 'busy' // 503 with Retry-After: 1
  | 'slow' // 200 after SLOW_MS
  | 'hang' // no answer: the attempt times out (the model projects' timeout is 1 s)
  | 'accept'; // 202, then a success report with the callback token (asyncCompletion projects)

export const SLOW_MS = 150;

export const BUSY_RETRY_AFTER_S = 1;

const answerOf = (mode: ReceiverMode): [number, Record<string, string>] =>
  mode === 'fail' ? [500, {}] : mode === 'busy' ? [503, { 'retry-after': String(BUSY_RETRY_AFTER_S) }] : mode === 'accept' ? [202, {}] : [200, {}];

/** One delivery as it reached the receiver; times by the application clock. */
export interface Delivery {
  project: string;
  jobId: string;
  attemptId: string;
  attemptNumber: number;
  callbackToken: string | null;
  arrivedAt: number;
  /** When the answer left (null while in flight, or never answered). */
  endedAt: number | null;
  status: number | null;
  mode: ReceiverMode;
  /** Open requests of its project when it arrived, itself included. */
  openAtArrival: number;
  /** The instance generation that sent it (bumped at each kill). */
  generation: number;
}

/** A probe of a held project (SPEC section 13, `"probe": true`) as it reached the receiver. */
export interface Probe {
  project: string;
  arrivedAt: number;
  endedAt: number | null;
  status: number | null;
  mode: ReceiverMode;
}

/**
 * One receiver for every project of a run, each at its own path (/p/<name>): it records every
 * delivery with the application clock's arrival and end, and answers as the project's mode says.
 */
export class ModelReceiver {
  readonly deliveries: Delivery[] = [];
  /** Probes, answered by the project's mode as its jobs are, apart from the jobs' deliveries. */
  readonly probes: Probe[] = [];
  private readonly modes = new Map<string, ReceiverMode>();
  private readonly open = new Map<string, number>();
  private readonly server = createServer((req, res) => void this.handle(req, res));
  private readonly sockets = new Set<Socket>();
  generation = 0;
  /** Called on an accepted (202) delivery once answered: the test reports on it. */
  onAccepted: (delivery: Delivery) => void = () => {};
  base = '';

  constructor(private readonly clock: Clock) {}

  async start(): Promise<this> {
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  urlOf(project: string): string {
    return `${this.base}/p/${project}`;
  }

  setMode(project: string, mode: ReceiverMode): void {
    this.modes.set(project, mode);
  }

  modeOf(project: string): ReceiverMode {
    return this.modes.get(project) ?? 'ok';
  }

  openRequests(project?: string): number {
    if (project !== undefined) return this.open.get(project) ?? 0;
    let total = 0;
    for (const n of this.open.values()) total += n;
    return total;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrivedAt = this.clock.now();
    const project = (req.url ?? '').replace(/^\/p\//, '');
    this.open.set(project, (this.open.get(project) ?? 0) + 1);
    let body = '';
    for await (const chunk of req) body += chunk;
    const json = JSON.parse(body) as Record<string, unknown>;
    const mode = this.modes.get(project) ?? 'ok';
    if (json.probe === true) return this.answerProbe(project, mode, res, arrivedAt);
    const delivery: Delivery = {
      project,
      jobId: json.jobId as string,
      attemptId: json.attemptId as string,
      attemptNumber: json.attemptNumber as number,
      callbackToken: (json.callbackToken as string | undefined) ?? null,
      arrivedAt,
      endedAt: null,
      status: null,
      mode,
      openAtArrival: this.open.get(project)!,
      generation: this.generation,
    };
    this.deliveries.push(delivery);
    if (mode === 'hang') {
      // Closed by the sender at its timeout; counted open until then.
      res.on('close', () => {
        this.open.set(project, this.open.get(project)! - 1);
        delivery.endedAt = this.clock.now();
      });
      return;
    }
    if (mode === 'slow') await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
    const [status, headers] = answerOf(mode);
    // Counted closed as the answer leaves: the sender's slot frees once it has the answer.
    this.open.set(project, this.open.get(project)! - 1);
    delivery.endedAt = this.clock.now();
    delivery.status = status;
    res.writeHead(status, headers);
    res.end('');
    if (status === 202) this.onAccepted(delivery);
  }

  private async answerProbe(project: string, mode: ReceiverMode, res: ServerResponse, arrivedAt: number): Promise<void> {
    const probe: Probe = { project, arrivedAt, endedAt: null, status: null, mode };
    this.probes.push(probe);
    const close = () => {
      this.open.set(project, this.open.get(project)! - 1);
      probe.endedAt = this.clock.now();
    };
    if (mode === 'hang') {
      res.on('close', close);
      return;
    }
    if (mode === 'slow') await new Promise((resolve) => setTimeout(resolve, SLOW_MS));
    const [status, headers] = answerOf(mode);
    close();
    probe.status = status;
    res.writeHead(status, headers);
    res.end('');
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
