import { spawn, type ChildProcess } from 'node:child_process';

/**
 * A webhook receiver in a process of its own, for load tests: arrival times are stamped by an
 * event loop that does nothing else, not by the busy test worker. It answers 200 and records
 * (jobId, arrival) pairs, served at GET /arrivals.
 */
const SOURCE = `
const http = require('node:http');
const arrivals = [];
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/arrivals') { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(arrivals)); return; }
  const at = Date.now();
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => { try { arrivals.push([JSON.parse(body).jobId, at]); } catch {} res.end('ok'); });
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

  async arrivals(): Promise<{ jobId: string; arrivedAt: number }[]> {
    const pairs = (await (await fetch(`${this.base}/arrivals`)).json()) as [string, number][];
    return pairs.map(([jobId, arrivedAt]) => ({ jobId, arrivedAt }));
  }

  async stop(): Promise<void> {
    this.child?.kill();
  }
}
