import { connect } from 'node:net';

export interface RawAnswer {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP/1.1 request written byte for byte on a fresh socket, so that a test chooses the exact
 * request target (percent-encoded, absolute-form) that a client library would normalise away.
 */
export function rawRequest(port: number, method: string, target: string, headers: Record<string, string> = {}, body = ''): Promise<RawAnswer> {
  const lines = [`${method} ${target} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`)];
  if (body) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks);
      const split = raw.indexOf('\r\n\r\n');
      const [status, ...headerLines] = raw.subarray(0, split).toString('latin1').split('\r\n');
      const parsed = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
      const statusCode = Number(/^HTTP\/1\.1 (\d{3})/.exec(status ?? '')?.[1] ?? 0);
      const rest = raw.subarray(split + 4);
      resolve({ statusCode, headers: parsed, body: (parsed['transfer-encoding'] === 'chunked' ? dechunk(rest) : rest).toString('utf8') });
    });
    // Written, not ended: a client that half-closes first may see its answer dropped. `Connection: close` ends it.
    socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
  });
}

function dechunk(body: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; ; ) {
    const end = body.indexOf('\r\n', at);
    const size = parseInt(body.subarray(at, end).toString('latin1'), 16);
    if (!size) return Buffer.concat(parts);
    parts.push(body.subarray(end + 2, end + 2 + size));
    at = end + 2 + size + 2;
  }
}
