-- Trace context (SPEC section 4): the W3C traceparent a dispatch carried (with OpenTelemetry export
-- on, that of its dispatch span) and its tracestate, continued onto every delivery of the job.
-- Nullable, without a default and in no index: adding them rewrites nothing, and a job dispatched
-- without one stores nothing more.
ALTER TABLE jobs ADD COLUMN traceparent text;
ALTER TABLE jobs ADD COLUMN tracestate text;
