import { createServer } from 'node:http';
import { verifyWebhookSignature } from '../delivery/signature.js';

/** Signatures older or newer than this are refused, as Standard Webhooks receivers do. */
const TIMESTAMP_TOLERANCE_S = 300;

/**
 * `punctual listen`: a local webhook receiver for developing a handler. It verifies each
 * delivery's signature (with --secret), prints it as one JSON line, and answers 200 (401 when the
 * signature does not verify), so Punctual records a success or a failure as a real receiver would.
 */
export function listen(options: { port: number; host: string; secret: string | null; print: (line: string) => void }): Promise<{ close: () => Promise<void>; port: number }> {
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '');
      const timestamp = Number(req.headers['webhook-timestamp']);
      let verified: boolean | null = null;
      if (options.secret) {
        const fresh = Number.isFinite(timestamp) && Math.abs(Date.now() / 1000 - timestamp) <= TIMESTAMP_TOLERANCE_S;
        verified = fresh && verifyWebhookSignature(options.secret, id, timestamp, body, String(req.headers['webhook-signature'] ?? ''));
      }
      let payload: unknown = body;
      try {
        payload = JSON.parse(body);
      } catch {
        // printed as received
      }
      options.print(JSON.stringify({ receivedAt: new Date().toISOString(), method: req.method, path: req.url, webhookId: id, signature: verified === null ? 'not checked (no --secret)' : verified ? 'valid' : 'INVALID', body: payload }));
      res.writeHead(verified === false ? 401 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ received: true }));
    });
  });
  return new Promise((resolve, reject) => {
    server.on('error', reject);
    server.listen(options.port, options.host, () => {
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address ? address.port : options.port,
        close: () => new Promise((done) => server.close(() => done())),
      });
    });
  });
}
