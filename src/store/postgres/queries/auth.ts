/**
 * The PostgreSQL store's SQL for users, sessions and API keys, named as in ../../sqlite/queries/
 * under the same file name, so a diff shows both dialects side by side. Aliases are quoted:
 * PostgreSQL folds unquoted names to lower case.
 */

const API_KEY_COLUMNS = `id, project_id AS "projectId", name, prefix, created_at AS "createdAt", last_used_at AS "lastUsedAt",
  revoked_at AS "revokedAt"`;
export const ApiKeyInsert = `INSERT INTO api_keys (id, project_id, name, key_hash, prefix, created_at, last_used_at, revoked_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`;
/** One indexed lookup by hash brings the key, its project and its team. */
export const ApiKeyFindByHash = `SELECT k.id AS "keyId", k.project_id AS "keyProjectId", k.name AS "keyName", k.key_hash AS "keyHash",
  k.prefix AS "keyPrefix", k.created_at AS "keyCreatedAt", k.last_used_at AS "keyLastUsedAt", k.revoked_at AS "keyRevokedAt",
  t.name AS "teamName", t.plan AS "teamPlan", t.created_at AS "teamCreatedAt",
  p.id, p.team_id AS "teamId", p.name, p.webhook_url AS "webhookUrl", p.retry_max_retries AS "retryMaxRetries",
  p.retry_initial_delay_ms AS "retryInitialDelayMs", p.retry_factor AS "retryFactor", p.retry_max_delay_ms AS "retryMaxDelayMs",
  p.delivery_timeout_ms AS "deliveryTimeoutMs", p.delivery_concurrency AS "deliveryConcurrency",
  p.accept_any_2xx AS "acceptAny2xx", p.retention_days AS "retentionDays", p.paused, p.events_url AS "eventsUrl",
  p.events_format AS "eventsFormat", p.delivery_rate_per_second AS "deliveryRatePerSecond", p.async_completion AS "asyncCompletion",
  p.async_completion_timeout_ms AS "asyncCompletionTimeoutMs", p.key_concurrency AS "keyConcurrency", p.hold_on_failure AS "holdOnFailure",
  p.event_types AS "eventTypes", p.retry_stop_on AS "retryStopOn", p.created_at AS "createdAt"
  FROM api_keys k JOIN projects p ON p.id = k.project_id JOIN teams t ON t.id = p.team_id
  WHERE k.key_hash = $1`;
export const ApiKeyGet = `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE id = $1`;
export const ApiKeyListByProject = `SELECT ${API_KEY_COLUMNS} FROM api_keys WHERE project_id = $1 ORDER BY created_at, id`;
export const ApiKeyRevoke = `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING ${API_KEY_COLUMNS}`;
export const ApiKeyTouch = 'UPDATE api_keys SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)';
const USER_COLUMNS = 'id, email, is_operator AS "isOperator", created_at AS "createdAt", updated_at AS "updatedAt"';
export const UserInsert = `INSERT INTO users (id, email, password_hash, is_operator, created_at, updated_at)
  VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (email) DO NOTHING`;
export const UserGet = `SELECT ${USER_COLUMNS} FROM users WHERE id = $1`;
export const UserGetByEmail = `SELECT ${USER_COLUMNS}, password_hash AS "passwordHash" FROM users WHERE email = $1`;
export const UserGetPasswordHash = 'SELECT password_hash AS "passwordHash" FROM users WHERE id = $1';
export const UserList = `SELECT ${USER_COLUMNS} FROM users ORDER BY created_at, id`;
export const UserCount = 'SELECT count(*)::int AS n FROM users';
export const UserUpdatePassword = 'UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1';
export const SessionInsert = `INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)`;
export const SessionGet = `SELECT s.token_hash AS "tokenHash", s.user_id AS "userId", s.csrf_token AS "csrfToken",
  s.created_at AS "createdAt", s.expires_at AS "expiresAt", u.email, u.is_operator AS "isOperator",
  u.created_at AS "userCreatedAt", u.updated_at AS "userUpdatedAt"
  FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = $1 AND s.expires_at > $2`;
export const SessionDelete = 'DELETE FROM sessions WHERE token_hash = $1';
export const SessionDeleteByUser = 'DELETE FROM sessions WHERE user_id = $1 AND ($2::bytea IS NULL OR token_hash <> $2)';
export const SessionDeleteExpired = 'DELETE FROM sessions WHERE expires_at <= $1';
