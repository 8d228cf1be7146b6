import Database from 'better-sqlite3';

/**
 * Puts a job in a state the API cannot reach by itself yet (FAILED needs delivery), through a
 * second connection to the same SQLite file: a fixture, not a replacement for the store.
 */
export function setJobState(dbPath: string, jobId: string, fields: { status: string; attemptCount?: number; lastError?: string; failedAt?: number }): void {
  const db = new Database(dbPath);
  try {
    db.prepare(
      `UPDATE jobs SET status = @status, attempt_count = COALESCE(@attemptCount, attempt_count),
       last_error = COALESCE(@lastError, last_error), failed_at = @failedAt WHERE id = @jobId`,
    ).run({ jobId, status: fields.status, attemptCount: fields.attemptCount ?? null, lastError: fields.lastError ?? null, failedAt: fields.failedAt ?? null });
  } finally {
    db.close();
  }
}
