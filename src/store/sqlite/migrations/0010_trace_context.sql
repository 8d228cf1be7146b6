-- Trace context (SPEC section 4): the W3C traceparent a dispatch carried (with OpenTelemetry export
-- on, that of its dispatch span) and its tracestate, continued onto every delivery of the job.
-- Nullable and in no index: a job dispatched without one stores nothing more, and the claim's
-- partial index is unchanged.
ALTER TABLE jobs ADD COLUMN traceparent TEXT;
ALTER TABLE jobs ADD COLUMN tracestate TEXT;
