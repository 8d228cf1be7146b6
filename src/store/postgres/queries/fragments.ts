/**
 * The PostgreSQL store's SQL for column lists and conditions shared by the statements of several
 * nouns, named as in ../../sqlite/queries/ under the same file name, so a diff shows both dialects
 * side by side. Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */

/**
 * Stopped projects: paused (SPEC section 10) or held for a failing receiver (SPEC section 13), read
 * through the partial index projects_stopped. Nothing of theirs is claimed or started.
 */
export const STOPPED_PROJECTS = 'SELECT id FROM projects WHERE paused OR held_since IS NOT NULL';
/** Whether the job's project is stopped (a job entering QUEUED takes it as on_hold). */
export const PROJECT_STOPPED = '(SELECT paused OR held_since IS NOT NULL FROM projects WHERE projects.id = jobs.project_id)';
/** Projects a receiver's Retry-After holds back at the instant `now` (SPEC section 11), through projects_backoff. */
export const backedOffProjects = (now: string) => `SELECT id FROM projects WHERE backoff_until > ${now}`;
