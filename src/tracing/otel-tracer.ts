/**
 * The Tracer over the OpenTelemetry SDK: spans batched (BatchSpanProcessor) and exported over
 * OTLP/HTTP, as JSON or protobuf (config's otlpProtocol). The only module that imports @opentelemetry/*, loaded by tracer.ts's dynamic
 * import when export is on.
 *
 * The SDK reads its own standard variables: OTEL_EXPORTER_OTLP_ENDPOINT (`/v1/traces` appended)
 * or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION,
 * OTEL_TRACES_SAMPLER (default parent-based, always on), OTEL_BSP_*; OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES name the service ("punctual" when unset).
 *
 * No context manager or global registration: every parent is explicit, read from a stored
 * traceparent, so nothing depends on async context surviving a job's hop through the database.
 */
import { createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  ATTR_ERROR_TYPE,
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVER_ADDRESS,
  ATTR_SERVER_PORT,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_SCHEME,
} from '@opentelemetry/semantic-conventions';
import type { OtlpProtocol } from '../config.js';
import { traceIdOf, type TraceContext } from './trace-context.js';
import type { AttemptSpan, AttemptSpanResult, ClaimSpans, EnqueueSpan, TracedJob, Tracer } from './tracer.js';

/** Punctual's own span attributes. */
export const ATTR = {
  projectId: 'punctual.project.id',
  jobId: 'punctual.job.id',
  attemptId: 'punctual.attempt.id',
  attemptNumber: 'punctual.attempt.number',
  outcome: 'punctual.attempt.outcome',
  workerId: 'punctual.worker.id',
  claimBatchSize: 'punctual.claim.batch_size',
  // The attribute's exported name predates the word "enqueue" in the code; kept for the dashboards that read it.
  claimAtEnqueue: 'punctual.claim.at_dispatch',
} as const;

/** Sub-millisecond wall-clock time, as OpenTelemetry takes it (epoch ms). */
const wallNow = (): number => performance.timeOrigin + performance.now();

/** A stored or incoming context as a parent (remote: it crossed a process or the database). */
function parentContext(traceparent: string | null, tracestate: string | null): Context {
  if (traceparent === null) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: traceIdOf(traceparent),
    spanId: traceparent.slice(36, 52),
    traceFlags: Number.parseInt(traceparent.slice(53, 55), 16),
    isRemote: true,
    ...(tracestate !== null && { traceState: createTraceState(tracestate) }),
  });
}

function contextOf(span: Span): TraceContext {
  const { traceId, spanId, traceFlags, traceState } = span.spanContext();
  return { traceparent: `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}`, tracestate: traceState?.serialize() || null };
}

/**
 * Where an attempt went, as scheme, host and port only: a webhook URL's path and query often carry
 * its receiver's token (Slack's and Discord's incoming webhooks, a `?token=`), and whoever reads the
 * traces must not be able to post to it. Hence no url.full at all.
 */
export function attemptTarget(url: string): Attributes {
  try {
    const parsed = new URL(url);
    const port = parsed.port ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
    return { [ATTR_URL_SCHEME]: parsed.protocol.slice(0, -1), [ATTR_SERVER_ADDRESS]: parsed.hostname, [ATTR_SERVER_PORT]: port };
  } catch {
    return {};
  }
}

const FINE_OUTCOMES = new Set(['success', 'accepted']);

/**
 * How long exporting the last spans may hold up a shutdown. A reachable collector takes them in
 * milliseconds; an unreachable one is retried with backoff (6.5 s before the exit with the port
 * closed), and the whole shutdown has 30 s.
 */
const SHUTDOWN_FLUSH_MS = 2_000;

export function createOtelTracer(options: { serviceVersion: string; protocol: OtlpProtocol }): Tracer {
  // Later merges win: the environment's service name and attributes over Punctual's defaults.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'punctual', [ATTR_SERVICE_VERSION]: options.serviceVersion }))
    .merge(detectResources({ detectors: [envDetector] }));
  const exporter = options.protocol === 'http/protobuf' ? new OtlpProtobufExporter() : new OtlpJsonExporter();
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer('punctual', options.serviceVersion);

  return {
    startEnqueue(incoming: TraceContext | null, route: string): EnqueueSpan {
      const span = tracer.startSpan(
        'dispatch',
        { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: 'POST', [ATTR_HTTP_ROUTE]: route } },
        parentContext(incoming?.traceparent ?? null, incoming?.tracestate ?? null),
      );
      return {
        context: contextOf(span),
        end({ statusCode, projectId }) {
          span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, statusCode);
          if (projectId !== null) span.setAttribute(ATTR.projectId, projectId);
          // A server span is an error only for 5xx: a refused request is the client's.
          if (statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },

    startClaim(): ClaimSpans {
      const startTime = wallNow();
      return {
        end(jobs, { workerId, atEnqueue }) {
          const endTime = wallNow();
          for (const job of jobs) {
            if (job.traceparent === null) continue;
            const attributes = { [ATTR.jobId]: job.id, [ATTR.workerId]: workerId, [ATTR.claimBatchSize]: jobs.length, [ATTR.claimAtEnqueue]: atEnqueue };
            tracer.startSpan('claim', { kind: SpanKind.INTERNAL, startTime, attributes }, parentContext(job.traceparent, job.tracestate)).end(endTime);
          }
        },
      };
    },

    startAttempt(job: TracedJob, attempt): AttemptSpan {
      const attributes: Attributes = {
        [ATTR.jobId]: job.id,
        [ATTR.attemptId]: attempt.attemptId,
        [ATTR.attemptNumber]: attempt.attemptNumber,
        [ATTR_HTTP_REQUEST_METHOD]: 'POST',
        ...(attempt.url !== null && attemptTarget(attempt.url)),
      };
      const span = tracer.startSpan(
        'attempt',
        { kind: SpanKind.CLIENT, startTime: Math.max(attempt.startTime, wallNow()), attributes },
        parentContext(job.traceparent, job.tracestate),
      );
      return {
        context: contextOf(span),
        end({ outcome, statusCode, error }: AttemptSpanResult) {
          span.setAttribute(ATTR.outcome, outcome);
          if (statusCode !== null) span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, statusCode);
          if (!FINE_OUTCOMES.has(outcome)) {
            span.setAttribute(ATTR_ERROR_TYPE, statusCode !== null ? String(statusCode) : outcome);
            span.setStatus({ code: SpanStatusCode.ERROR, ...(error !== null && { message: error }) });
          }
          span.end();
        },
      };
    },

    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, SHUTDOWN_FLUSH_MS);
      });
      // Spans that could not be exported are lost, never a reason for the shutdown to fail.
      await Promise.race([provider.shutdown().catch(() => {}), deadline]);
      clearTimeout(timer);
    },
  };
}
