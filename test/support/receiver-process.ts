import { spawn, type ChildProcess } from 'node:child_process';

/**
 * A webhook receiver in a process of its own, for load tests: arrival times are stamped by an
 * event loop that does nothing else, not by the busy test worker. It answers 200 and records
 * (jobId, arrival, scheduleId, scheduledFor) rows, served at GET /arrivals.
 */
const SOURCE = `
const http = require('node:http');
const arrivals = [];
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/arrivals') { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(arrivals)); return; }
  const at = Date.now();
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => { try { const b = JSON.parse(body); arrivals.push([b.jobId, at, b.scheduleId ?? null, b.scheduledFor ?? null]); } catch {} res.end('ok'); });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'));
`;

export class ReceiverProcess {
  private child: ChildProcess | null = null;
  url = '';
  private base = '';

  async start(): Promise<this> {
    const child = spawn(process.execPath, ['-e', SOURCE], { stdio: ['ignore', 'pipe', 'inherit'] });
    this.child = child;
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.once('data', (chunk: Buffer) => resolve((JSON.parse(chunk.toString()) as { port: number }).port));
      child.once('exit', () => reject(new Error('receiver process exited')));
    });
    this.base = `http://127.0.0.1:${port}`;
    this.url = `${this.base}/hook`;
    return this;
  }

  /** Each delivery's job, arrival, and for a schedule's job its schedule and fire instant. */
  async arrivals(): Promise<{ jobId: string; arrivedAt: number; scheduleId: string | null; scheduledFor: string | null }[]> {
    const rows = (await (await fetch(`${this.base}/arrivals`)).json()) as [string, number, string | null, string | null][];
    return rows.map(([jobId, arrivedAt, scheduleId, scheduledFor]) => ({ jobId, arrivedAt, scheduleId, scheduledFor }));
  }

  async stop(): Promise<void> {
    this.child?.kill();
  }
}
