-- Flow control (SPEC section 11): at most this many attempts of the project start per second; null, no limit.
ALTER TABLE projects ADD COLUMN delivery_rate_per_second double precision;
-- Backpressure (SPEC section 11): a receiver's 429/503 Retry-After holds the project's deliveries
-- until this instant, on every instance (claims and starts read it).
ALTER TABLE projects ADD COLUMN backoff_until bigint;
CREATE INDEX projects_backoff ON projects (backoff_until) WHERE backoff_until IS NOT NULL;
