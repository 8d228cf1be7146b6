/**
 * A statement written with named parameters (`:name`, with a cast where PostgreSQL cannot tell the
 * type), numbered $1, $2… in the order the names first appear, so that its arguments are taken
 * from an object by name: for the statements of job-filters.ts, whose many optional fields would
 * be easy to misnumber by hand. `::type` casts are left alone.
 */
export interface NamedStatement {
  text: string;
  names: string[];
}

export function named(text: string): NamedStatement {
  const names: string[] = [];
  const numbered = text.replace(/(?<![:\w]):([A-Za-z]\w*)/g, (_match, name: string) => {
    if (!names.includes(name)) names.push(name);
    return `$${names.indexOf(name) + 1}`;
  });
  return { text: numbered, names };
}

/** The statement's arguments in order; a name missing from `values` is a fault in the caller. */
export function argumentsOf(statement: NamedStatement, values: Record<string, unknown>): unknown[] {
  return statement.names.map((name) => {
    if (!(name in values)) throw new Error(`No value for :${name}`);
    return values[name];
  });
}
