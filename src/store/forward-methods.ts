/**
 * How a driver's store presents its nouns as one Store: each noun interface's method names are
 * listed once (beside the interface, `*_STORE_METHODS`), the list is checked exhaustive at the type
 * level, and the driver copies those methods, bound, from its noun object onto itself. Adding a
 * method to a noun interface then means adding its name to the list (the compiler says so) and
 * writing it in each driver's noun class: no forwarding line per method per driver.
 */

/** The names an interface's method list lacks; `never` when it lists them all. */
type Missing<T, Names extends readonly PropertyKey[]> = Exclude<keyof T, Names[number]>;

/**
 * `methodList<JobStore>()([...names] as const)`: the names, typed; a name missing from the list
 * is a compile error that says which (`missingMethods`).
 */
export const methodList =
  <T>() =>
  <const Names extends readonly (keyof T)[]>(names: Names & ([Missing<T, Names>] extends [never] ? unknown : { missingMethods: Missing<T, Names> })): Names =>
    names;

/** Copies each named method of `source` onto `target`, bound to `source`. */
export function forwardMethods<T extends object>(target: object, source: T, names: readonly (keyof T)[]): void {
  for (const name of names) {
    const method = source[name];
    if (typeof method !== 'function') throw new Error(`forwardMethods: ${String(name)} is not a method of ${source.constructor.name}`);
    Object.defineProperty(target, name, { value: method.bind(source), enumerable: true });
  }
}
