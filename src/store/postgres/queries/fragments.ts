/**
 * The PostgreSQL store's SQL for column lists and conditions shared by the statements of several
 * nouns, named as in ../../sqlite/queries/ under the same file name, so a diff shows both dialects
 * side by side. Aliases are quoted: PostgreSQL folds unquoted names to lower case.
 */

/** Paused projects (SPEC section 10), read through the partial index projects_paused. */
export const PAUSED_PROJECTS = 'SELECT id FROM projects WHERE paused';
/** Projects a receiver's Retry-After holds back at the instant `now` (SPEC section 11), through projects_backoff. */
export const backedOffProjects = (now: string) => `SELECT id FROM projects WHERE backoff_until > ${now}`;
