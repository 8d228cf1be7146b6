/**
 * The fields each request body knows, and what a name it does not know is (SPEC sections 2, 5 and
 * 7). A job body (a dispatch, a batch item, a schedule) ignores an unknown field, except a near
 * miss of a known one, which would silently do the wrong thing (`scheduled_for` dropped makes a job
 * meant for December run at once): that is INVALID_REQUEST with `data.field`, the name sent, and
 * `data.didYouMean`, the field meant. A management body is strict: any unknown field is refused,
 * with `didYouMean` when a known field is near.
 *
 * Each body's list is one `fieldSet([...])` beside the reader of that body: a new field is added
 * there, once. Checking costs a Set lookup per key of the body and nothing more while every key is
 * known, so a valid dispatch pays no more than that.
 */
import { InvalidRequestError } from '../../errors.js';

/**
 * Names people send for a job's fields (other queues' spellings, SPEC section 2): each applies to
 * a body that knows the field it stands for.
 */
export const JOB_FIELD_ALIASES: Readonly<Record<string, string>> = {
  runAt: 'scheduledFor',
  delay: 'scheduledFor',
  delayMs: 'scheduledFor',
  scheduledAt: 'scheduledFor',
  retries: 'maxRetries',
  data: 'payload',
  body: 'payload',
};

/** A name as compared for a near miss: letter case, `_` and `-` aside. */
const folded = (name: string): string => name.replace(/[_-]/g, '').toLowerCase();

export interface FieldSet {
  /** The fields, as the contract spells them, in the order a message lists them. */
  readonly names: readonly string[];
  readonly has: (name: string) => boolean;
  /** The known field a name folds to, or an alias names; undefined for none. */
  readonly nearMiss: (name: string) => string | undefined;
}

/**
 * The fields of one body. `aliases` maps other names to the field they stand for; only those whose
 * field is in `names` are kept.
 */
export function fieldSet(names: readonly string[], aliases: Readonly<Record<string, string>> = {}): FieldSet {
  const known = new Set(names);
  const byFolded = new Map<string, string>();
  for (const name of names) byFolded.set(folded(name), name);
  for (const [alias, field] of Object.entries(aliases)) if (known.has(field) && !byFolded.has(folded(alias))) byFolded.set(folded(alias), field);
  return {
    names,
    has: (name) => known.has(name),
    nearMiss: (name) => byFolded.get(folded(name)),
  };
}

/** Levenshtein distance, stopping early once it is over `max`. */
function distance(a: string, b: string, max: number): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j += 1) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      rowMin = Math.min(rowMin, current[j]!);
    }
    if (rowMin > max) return max + 1;
    previous = current;
  }
  return previous[b.length]!;
}

/** For a strict body: the near miss, else a known field within two typing slips of the name (`webhookUrll`). */
function closest(name: string, fields: FieldSet): string | undefined {
  const near = fields.nearMiss(name);
  if (near !== undefined) return near;
  const typed = folded(name);
  let best: string | undefined;
  let bestDistance = 3;
  for (const field of fields.names) {
    const d = distance(typed, folded(field), 2);
    if (d < bestDistance) [best, bestDistance] = [field, d];
  }
  return best;
}

function nearMissError(shown: string, meant: string, where: string): InvalidRequestError {
  return new InvalidRequestError(`${shown} is not a field of ${where}: did you mean ${meant}?`, { field: shown, didYouMean: meant });
}

/**
 * A job body's unknown fields: ignored, unless one is a near miss of a known field (refused, naming
 * both). A batch item is answered in its own slot, so its fields are named as in a dispatch.
 */
export function refuseNearMisses(body: Record<string, unknown>, fields: FieldSet, where: string): void {
  for (const name in body) {
    if (fields.has(name)) continue;
    const meant = fields.nearMiss(name);
    if (meant !== undefined) throw nearMissError(name, meant, where);
  }
}

/**
 * A strict body's unknown fields: the first is refused, with `didYouMean` when a known field is
 * near. `prefix` names a nested object's fields (`retryPolicy.`).
 */
export function refuseUnknownFields(body: Record<string, unknown>, fields: FieldSet, where: string, prefix = ''): void {
  for (const name in body) {
    if (fields.has(name)) continue;
    const shown = `${prefix}${name}`;
    const meant = closest(name, fields);
    if (meant !== undefined) throw nearMissError(shown, `${prefix}${meant}`, where);
    throw new InvalidRequestError(`${shown} is not a field of ${where}; the fields are ${fields.names.map((f) => `${prefix}${f}`).join(', ')}`, { field: shown });
  }
}
