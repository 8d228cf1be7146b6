/**
 * The storage contract. Code outside src/store/ imports this file and never a driver.
 *
 * The contract is split by noun, one file each beside this one (job-store.ts, attempt-store.ts,
 * tenancy-store.ts, auth-store.ts, retention-store.ts, schedule-store.ts, event-store.ts,
 * overview-store.ts), each with its methods and its own row and param types; Store composes them,
 * and this file re-exports the types of those it always did, so importers need not know the split.
 * Inside src/store/, modules import the noun files themselves, so that no two files import each other.
 *
 * Methods are named noun-first after what they touch, and a method that changes a job names the
 * state it requires (`jobCancelIfQueued`), so a late or duplicate write changes nothing.
 * Every instant is epoch milliseconds supplied by the caller's clock: a store never reads the time.
 */
import type { AttemptStore } from './attempt-store.js';
import type { AuthStore } from './auth-store.js';
import type { EventStore } from './event-store.js';
import type { JobStore } from './job-store.js';
import type { OverviewStore } from './overview-store.js';
import type { RetentionStore } from './retention-store.js';
import type { ScheduleStore } from './schedule-store.js';
import type { TenancyStore } from './tenancy-store.js';

export * from './attempt-store.js';
export * from './auth-store.js';
export * from './job-store.js';
export * from './retention-store.js';
export * from './tenancy-store.js';

export interface Store extends TenancyStore, AuthStore, JobStore, AttemptStore, RetentionStore, ScheduleStore, EventStore, OverviewStore {
  /** Which driver, for messages (the CLI's `migrate` answer); what differs is said by the members below. */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * True when this process is the only instance on the database (SQLite: one `punctual serve` per
   * file), so a lease found at start was left by a process that is gone and can be taken over at
   * once. False where other instances may hold live leases (PostgreSQL): only expired ones are.
   */
  readonly soleInstance: boolean;
  /**
   * Where the key that seals webhook secrets is generated and kept when PUNCTUAL_SECRET_KEY is not
   * set (SQLite: beside the database file). Null where the key must be configured (PostgreSQL:
   * every instance needs the same one).
   */
  readonly secretKeyFile: string | null;

  migrate(): Promise<void>;
  /**
   * Hints from other instances that a job became due (PostgreSQL LISTEN/NOTIFY). A store serving
   * a single process (SQLite) has no other instances and does not implement it.
   */
  listenJobDue?(listener: (runAt: number) => void): Promise<void>;
  /** The database server's clock (epoch ms), where there is a server to drift from. */
  databaseNow?(): Promise<number>;

  /** Resolves when the storage answers; used by /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
