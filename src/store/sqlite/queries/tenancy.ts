/**
 * The embedded store's SQL for settings, teams and their members, projects, their webhook secrets
 * and daily usage, named after the store method that runs it, as in ../../postgres/queries/ under
 * the same file name. Columns are aliased to the camelCase row types of ../../store.ts so rows need
 * little mapping.
 */

const TEAM_COLUMNS = 'id, name, plan, created_at AS createdAt';
const PROJECT_COLUMNS = `id, team_id AS teamId, name, webhook_url AS webhookUrl, retry_max_retries AS retryMaxRetries,
  retry_initial_delay_ms AS retryInitialDelayMs, retry_factor AS retryFactor, retry_max_delay_ms AS retryMaxDelayMs,
  delivery_timeout_ms AS deliveryTimeoutMs, delivery_concurrency AS deliveryConcurrency, accept_any_2xx AS acceptAny2xx,
  retention_days AS retentionDays, paused, events_url AS eventsUrl, events_format AS eventsFormat,
  delivery_rate_per_second AS deliveryRatePerSecond, async_completion AS asyncCompletion,
  async_completion_timeout_ms AS asyncCompletionTimeoutMs, key_concurrency AS keyConcurrency, hold_on_failure AS holdOnFailure,
  event_types AS eventTypes, retry_stop_on AS retryStopOn, created_at AS createdAt`;
export const SettingGet = 'SELECT value FROM settings WHERE key = ?';
/** A write whose only purpose is to find out whether the disk takes writes again (readiness). */
export const WriteProbe = `INSERT INTO settings (key, value) VALUES ('write_probe_at', @now)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
/** Counts commits that changed keys, projects, teams or secrets, from any process: readers drop their cache when it moves. */
export const CacheEpochBump = `INSERT INTO settings (key, value) VALUES ('cache_epoch', '1')
  ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)`;
export const CacheEpochGet = "SELECT value FROM settings WHERE key = 'cache_epoch'";
export const SettingInsertIfAbsent = 'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING';
export const TeamInsert = 'INSERT INTO teams (id, name, plan, created_at) VALUES (@id, @name, @plan, @createdAt)';
export const TeamGet = `SELECT ${TEAM_COLUMNS} FROM teams WHERE id = ?`;
export const TeamUpdate = `UPDATE teams SET name = COALESCE(@name, name), plan = COALESCE(@plan, plan) WHERE id = @teamId
  RETURNING ${TEAM_COLUMNS}`;
export const TeamCount = 'SELECT count(*) AS n FROM teams';
export const ProjectInsert = `INSERT INTO projects (id, team_id, name, webhook_url, retry_max_retries, retry_initial_delay_ms,
  retry_factor, retry_max_delay_ms, delivery_timeout_ms, delivery_concurrency, accept_any_2xx, retention_days, paused,
  events_url, events_format, delivery_rate_per_second, async_completion, async_completion_timeout_ms, hold_on_failure, event_types,
  retry_stop_on, created_at, key_concurrency)
  VALUES (@id, @teamId, @name, @webhookUrl, @retryMaxRetries, @retryInitialDelayMs, @retryFactor, @retryMaxDelayMs,
  @deliveryTimeoutMs, @deliveryConcurrency, @acceptAny2xx, @retentionDays, @paused, @eventsUrl, @eventsFormat, @deliveryRatePerSecond,
  @asyncCompletion, @asyncCompletionTimeoutMs, @holdOnFailure, @eventTypes, @retryStopOn, @createdAt, @keyConcurrency)`;
export const ProjectGet = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = ?`;
export const ProjectListByTeam = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE team_id = ? ORDER BY created_at, id`;
export const ProjectUpdate = `UPDATE projects SET name = @name, webhook_url = @webhookUrl, retry_max_retries = @retryMaxRetries,
  retry_initial_delay_ms = @retryInitialDelayMs, retry_factor = @retryFactor, retry_max_delay_ms = @retryMaxDelayMs,
  delivery_timeout_ms = @deliveryTimeoutMs, delivery_concurrency = @deliveryConcurrency, accept_any_2xx = @acceptAny2xx,
  retention_days = @retentionDays, paused = @paused, events_url = @eventsUrl, events_format = @eventsFormat,
  delivery_rate_per_second = @deliveryRatePerSecond, async_completion = @asyncCompletion,
  async_completion_timeout_ms = @asyncCompletionTimeoutMs, key_concurrency = @keyConcurrency, hold_on_failure = @holdOnFailure,
  event_types = @eventTypes, retry_stop_on = @retryStopOn,
  -- Turning holdOnFailure off ends a hold (its jobs are then released: ../../../maintenance/project-holds.ts).
  held_since = CASE WHEN @holdOnFailure = 1 THEN held_since END, next_probe_at = CASE WHEN @holdOnFailure = 1 THEN next_probe_at END,
  probe_interval_ms = CASE WHEN @holdOnFailure = 1 THEN probe_interval_ms END WHERE id = @id`;
export const WebhookSecretInsert = `INSERT INTO webhook_secrets (id, project_id, secret_ciphertext, created_at, expires_at)
  VALUES (@id, @projectId, @ciphertext, @createdAt, @expiresAt)`;
export const WebhookSecretListActive = `SELECT id, project_id AS projectId, secret_ciphertext AS ciphertext, created_at AS createdAt,
  expires_at AS expiresAt FROM webhook_secrets WHERE project_id = @projectId AND (expires_at IS NULL OR expires_at > @now)
  ORDER BY created_at DESC, expires_at IS NULL DESC`;
/** A rotation drops every secret that was already on its way out, so at most two ever sign. */
export const WebhookSecretDeleteExpiring = 'DELETE FROM webhook_secrets WHERE project_id = ? AND expires_at IS NOT NULL';
export const WebhookSecretExpireNewest = 'UPDATE webhook_secrets SET expires_at = @expiresAt WHERE project_id = @projectId AND expires_at IS NULL';
/**
 * Whether a project's new jobs are held (it is paused or held, SPEC sections 10 and 13) and whether
 * they may start now (not held back by a receiver's Retry-After either): read once per creation, in
 * its transaction.
 */
export const ProjectCreationStateGet = `SELECT paused = 1 OR held_since IS NOT NULL AS paused,
  paused = 0 AND held_since IS NULL AND coalesce(backoff_until, 0) <= @now AS startable FROM projects WHERE id = @projectId`;
/** A receiver's Retry-After (SPEC section 11): the project's deliveries wait until @until on every instance; a later hold wins. */
export const ProjectBackoff = `UPDATE projects SET backoff_until = max(coalesce(backoff_until, 0), @until) WHERE id = @projectId`;
export const UsageAdd = `INSERT INTO usage_daily (team_id, day, jobs_created) VALUES (?, ?, ?)
  ON CONFLICT (team_id, day) DO UPDATE SET jobs_created = jobs_created + excluded.jobs_created`;
export const UsageSum = `SELECT COALESCE(SUM(jobs_created), 0) AS n FROM usage_daily WHERE team_id = ? AND day >= ? AND day < ?`;
export const UsageDaily = `SELECT day, jobs_created AS jobsCreated FROM usage_daily WHERE team_id = ? AND day >= ? AND day < ?
  ORDER BY day`;
export const TeamList = `SELECT ${TEAM_COLUMNS} FROM teams ORDER BY created_at, id`;
export const TeamListByUser = `SELECT t.id, t.name, t.plan, t.created_at AS createdAt FROM teams t
  JOIN team_memberships m ON m.team_id = t.id WHERE m.user_id = ? ORDER BY t.created_at, t.id`;
export const TeamMembershipInsert = `INSERT INTO team_memberships (user_id, team_id, created_at) VALUES (@userId, @teamId, @now)
  ON CONFLICT (user_id, team_id) DO NOTHING`;
/** Projects neither paused nor held that still have held jobs (a resume or a recovery cut short). */
export const ProjectListWithHeldJobs = `SELECT id FROM projects p WHERE paused = 0 AND held_since IS NULL
  AND EXISTS (SELECT 1 FROM jobs INDEXED BY jobs_held WHERE project_id = p.id AND status = 'QUEUED' AND on_hold = 1)`;
