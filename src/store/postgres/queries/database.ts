/**
 * The PostgreSQL store's SQL for the database itself: migrations, its clock, readiness,
 * LISTEN/NOTIFY, named as in ../../sqlite/queries/ under the same file name, so a diff shows both
 * dialects side by side. Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */

/** Wakes the schedulers of every instance; the payload is the due time in ms. */
export const NotifyDue = `SELECT pg_notify('punctual_job_due', $1::text)`;
/** Sent in the transaction of every change to keys, projects, teams or secrets: instances drop their read caches. */
export const NotifyConfigChanged = `SELECT pg_notify('punctual_config_changed', '')`;
/**
 * The migrating session waits as long as it takes: for another instance's migration (the lock) and
 * for a long migration. Set per session, over any default of the role or database.
 */
export const MigrationSessionWithoutTimeouts = 'SET statement_timeout = 0; SET lock_timeout = 0';
export const MigrationLock = 'SELECT pg_advisory_lock($1)';
export const SchemaMigrationsCreate = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)`;
export const SchemaMigrationsList = 'SELECT version FROM schema_migrations';
/** Recorded first, in the migration's own transaction (graphile's trick): two sessions cannot both apply it. */
export const SchemaMigrationInsert = 'INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)';
export const DatabaseNow = 'SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now';
/** Ready means reachable and writable: a replica or a demoted primary is not ready. */
export const DatabaseWritable = "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off' AS writable";
/** Both channels on the LISTEN connection, in one round trip. */
export const ListenAll = 'LISTEN punctual_job_due; LISTEN punctual_config_changed';
/** The LISTEN connection's heartbeat: any answer proves the connection still carries bytes both ways. */
export const ListenerHeartbeat = 'SELECT 1';
