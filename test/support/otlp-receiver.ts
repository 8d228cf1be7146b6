import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as OTLP/HTTP JSON carries it, flattened with its resource's attributes. */
export interface ExportedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, unknown>;
  status: { code?: number; message?: string };
  resource: Record<string, unknown>;
}

type OtlpValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
type OtlpAttribute = { key: string; value: OtlpValue };

function attributes(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) {
    // OTLP JSON writes 64-bit integers as strings or numbers, depending on the encoder.
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : undefined) ?? value.boolValue ?? value.doubleValue;
  }
  return out;
}

/**
 * A local OTLP/HTTP collector on 127.0.0.1:<random port>: takes POST /v1/traces in the JSON
 * encoding (what @opentelemetry/exporter-trace-otlp-http sends) and keeps every span; protobuf
 * bodies (exporter-trace-otlp-proto) are kept whole, undecoded. Answers 200.
 */
export class OtlpReceiver {
  /** Every export request, as path and content type. */
  readonly requests: { path: string; contentType: string | undefined }[] = [];
  readonly spans: ExportedSpan[] = [];
  /** The bodies of protobuf export requests, as received. */
  readonly protobufBodies: Buffer[] = [];
  private readonly server = createServer((req, res) => void this.handle(req, res));
  /** What OTEL_EXPORTER_OTLP_ENDPOINT is set to (the exporter appends /v1/traces). */
  endpoint = '';

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.endpoint = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const contentType = req.headers['content-type'];
    this.requests.push({ path: req.url ?? '', contentType });
    if (req.method === 'POST' && req.url === '/v1/traces' && contentType === 'application/x-protobuf') {
      this.protobufBodies.push(Buffer.concat(chunks));
      // An empty ExportTraceServiceResponse: every span accepted.
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      return;
    }
    if (req.method !== 'POST' || req.url !== '/v1/traces' || !contentType?.startsWith('application/json')) {
      res.writeHead(415).end();
      return;
    }
    const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: Record<string, unknown>[] }[] }[];
    };
    for (const resourceSpan of parsed.resourceSpans ?? []) {
      const resource = attributes(resourceSpan.resource?.attributes);
      for (const scope of resourceSpan.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({
            traceId: span.traceId as string,
            spanId: span.spanId as string,
            parentSpanId: (span.parentSpanId as string | undefined) ?? '',
            name: span.name as string,
            kind: span.kind as number,
            attributes: attributes(span.attributes as OtlpAttribute[]),
            status: (span.status as ExportedSpan['status'] | undefined) ?? {},
            resource,
          });
        }
      }
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
