/**
 * Spans of a job's life, exported through OpenTelemetry when PUNCTUAL's config turns OTLP export
 * on (OTEL_EXPORTER_OTLP_ENDPOINT). The rest of the code sees only this interface and holds a
 * `Tracer | null`: with export off it is null, the SDK is never imported, and tracing costs one
 * `if (tracer)` on the paths that would make spans.
 */
import type { TraceContext } from './trace-context.js';

/** What a span needs of a job (a store's JobRow has it): its id and the trace it continues. */
export interface TracedJob {
  id: string;
  traceparent: string | null;
  tracestate: string | null;
}

/** The server side of an enqueue request (POST /api/jobs/dispatch and its batch). */
export interface EnqueueSpan {
  /** What the jobs it creates store: this span's context, so that their attempts are its children. */
  readonly context: TraceContext;
  end(result: { statusCode: number; projectId: string | null }): void;
}

/** One claim of due jobs, begun before its statement; ended with the jobs it took. */
export interface ClaimSpans {
  /** One `claim` span per job that has a trace, as its child; a job without one gets none. */
  end(jobs: readonly TracedJob[], info: { workerId: string; atEnqueue: boolean }): void;
}

/** An attempt's outcome, as the span records it. */
export interface AttemptSpanResult {
  /** An attempt record's outcome, `accepted` (202, async completion) or `aborted` (shutdown). */
  outcome: string;
  statusCode: number | null;
  error: string | null;
}

/** One delivery attempt, a CLIENT span. */
export interface AttemptSpan {
  /** Sent as the delivery's traceparent: the attempt span's own id. */
  readonly context: TraceContext;
  end(result: AttemptSpanResult): void;
}

export interface Tracer {
  /** Child of the client's context when the request carried one, else the root of a new trace. */
  startEnqueue(incoming: TraceContext | null, route: string): EnqueueSpan;
  startClaim(): ClaimSpans;
  /**
   * Child of the job's stored context (the enqueue span), or a root for a job without one (a
   * schedule's). `startTime` is the wall-clock instant (ms) the request leaves, when later than now.
   */
  startAttempt(job: TracedJob, attempt: { attemptId: string; attemptNumber: number; url: string | null; startTime: number }): AttemptSpan;
  /** Exports what is buffered and stops (graceful shutdown). */
  shutdown(): Promise<void>;
}
