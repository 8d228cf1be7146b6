import type Database from 'better-sqlite3';

type Statement = Database.Statement<unknown[], unknown>;
/** Prepares a statement once per connection and reuses it (the writer thread's and the reader's). */
export type Sql = (text: string) => Statement;
