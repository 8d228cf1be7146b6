/**
 * The PostgreSQL store's SQL for settings, teams and their members, projects, their webhook secrets
 * and daily usage, named as in ../../sqlite/queries/ under the same file name, so a diff shows both
 * dialects side by side. Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */

const TEAM_COLUMNS = 'id, name, plan, created_at AS "createdAt"';
const PROJECT_COLUMNS = `id, team_id AS "teamId", name, webhook_url AS "webhookUrl", retry_max_retries AS "retryMaxRetries",
  retry_initial_delay_ms AS "retryInitialDelayMs", retry_factor AS "retryFactor", retry_max_delay_ms AS "retryMaxDelayMs",
  delivery_timeout_ms AS "deliveryTimeoutMs", delivery_concurrency AS "deliveryConcurrency", accept_any_2xx AS "acceptAny2xx",
  retention_days AS "retentionDays", paused, events_url AS "eventsUrl", events_format AS "eventsFormat",
  delivery_rate_per_second AS "deliveryRatePerSecond", async_completion AS "asyncCompletion",
  async_completion_timeout_ms AS "asyncCompletionTimeoutMs", key_concurrency AS "keyConcurrency", hold_on_failure AS "holdOnFailure",
  event_types AS "eventTypes", retry_stop_on AS "retryStopOn", created_at AS "createdAt"`;
export const SettingGet = 'SELECT value FROM settings WHERE key = $1';
export const SettingInsertIfAbsent = `WITH ins AS (INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING value)
  SELECT value FROM ins UNION ALL SELECT value FROM settings WHERE key = $1 LIMIT 1`;
export const TeamInsert = 'INSERT INTO teams (id, name, plan, created_at) VALUES ($1, $2, $3, $4)';
export const TeamGet = `SELECT ${TEAM_COLUMNS} FROM teams WHERE id = $1`;
export const TeamUpdate = `UPDATE teams SET name = COALESCE($2, name), plan = COALESCE($3, plan) WHERE id = $1 RETURNING ${TEAM_COLUMNS}`;
export const TeamCount = 'SELECT count(*)::int AS n FROM teams';
export const ProjectInsert = `INSERT INTO projects (id, team_id, name, webhook_url, retry_max_retries, retry_initial_delay_ms,
  retry_factor, retry_max_delay_ms, delivery_timeout_ms, delivery_concurrency, accept_any_2xx, retention_days, paused,
  events_url, events_format, delivery_rate_per_second, async_completion, async_completion_timeout_ms, hold_on_failure, event_types,
  retry_stop_on, created_at, key_concurrency)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)`;
export const ProjectGet = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1`;
export const ProjectGetForUpdate = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1 FOR UPDATE`;
export const ProjectGetMany = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = ANY($1::text[])`;
export const ProjectListByTeam = `SELECT ${PROJECT_COLUMNS} FROM projects WHERE team_id = $1 ORDER BY created_at, id`;
export const ProjectUpdate = `UPDATE projects SET name = $2, webhook_url = $3, retry_max_retries = $4, retry_initial_delay_ms = $5,
  retry_factor = $6, retry_max_delay_ms = $7, delivery_timeout_ms = $8, delivery_concurrency = $9, accept_any_2xx = $10,
  retention_days = $11, paused = $12, events_url = $13, events_format = $14,
  delivery_rate_per_second = $15, async_completion = $16, async_completion_timeout_ms = $17, hold_on_failure = $18,
  event_types = $19, retry_stop_on = $20, key_concurrency = $21,
  -- Turning holdOnFailure off ends a hold (its jobs are then released: ../../../maintenance/project-holds.ts).
  held_since = CASE WHEN $18 THEN held_since END, next_probe_at = CASE WHEN $18 THEN next_probe_at END,
  probe_interval_ms = CASE WHEN $18 THEN probe_interval_ms END WHERE id = $1`;
export const WebhookSecretInsert = `INSERT INTO webhook_secrets (id, project_id, secret_ciphertext, created_at, expires_at)
  VALUES ($1, $2, $3, $4, $5)`;
export const WebhookSecretListActive = `SELECT id, project_id AS "projectId", secret_ciphertext AS ciphertext, created_at AS "createdAt",
  expires_at AS "expiresAt" FROM webhook_secrets WHERE project_id = $1 AND (expires_at IS NULL OR expires_at > $2)
  ORDER BY created_at DESC, expires_at IS NULL DESC`;
/** A rotation drops every secret that was already on its way out, so at most two ever sign. */
export const WebhookSecretDeleteExpiring = 'DELETE FROM webhook_secrets WHERE project_id = $1 AND expires_at IS NOT NULL';
export const WebhookSecretExpireNewest = 'UPDATE webhook_secrets SET expires_at = $2 WHERE project_id = $1 AND expires_at IS NULL';
/** Rotations of one project take turns, so two at once cannot leave three secrets signing. */
export const ProjectLock = 'SELECT 1 FROM projects WHERE id = $1 FOR UPDATE';
/**
 * Jobs of a team with a quota are created one transaction at a time, so the count cannot be
 * overtaken. Locks the teams in the order of the array (sorted by the caller, the same on every instance).
 */
export const TeamsLock = `SELECT t.id FROM unnest($1::text[]) WITH ORDINALITY AS l(id, ord)
  JOIN teams t ON t.id = l.id ORDER BY l.ord FOR UPDATE OF t`;
/** Each (team, month) pair's jobs created, in the order of the arrays. */
export const UsageSumMany = `SELECT (SELECT COALESCE(SUM(d.jobs_created), 0) FROM usage_daily d
    WHERE d.team_id = m.team_id AND d.day >= m.month_start AND d.day < m.month_end)::bigint AS n
  FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS m(team_id, month_start, month_end, ord)
  ORDER BY m.ord`;
/** A day's count is the sum of its shards (migration 0003). */
export const UsageDaily = `SELECT day, SUM(jobs_created)::bigint AS "jobsCreated" FROM usage_daily
  WHERE team_id = $1 AND day >= $2 AND day < $3 GROUP BY day ORDER BY day`;
export const TeamList = `SELECT ${TEAM_COLUMNS} FROM teams ORDER BY created_at, id`;
export const TeamListByUser = `SELECT t.id, t.name, t.plan, t.created_at AS "createdAt" FROM teams t
  JOIN team_memberships m ON m.team_id = t.id WHERE m.user_id = $1 ORDER BY t.created_at, t.id`;
export const TeamMembershipInsert = `INSERT INTO team_memberships (user_id, team_id, created_at) VALUES ($1, $2, $3)
  ON CONFLICT (user_id, team_id) DO NOTHING`;
export const ProjectListWithHeldJobs = `SELECT id FROM projects p WHERE NOT paused AND held_since IS NULL
  AND EXISTS (SELECT 1 FROM jobs WHERE project_id = p.id AND status = 'QUEUED' AND on_hold)`;
export const ProjectBackoff = 'UPDATE projects SET backoff_until = GREATEST(COALESCE(backoff_until, 0), $2) WHERE id = $1';
