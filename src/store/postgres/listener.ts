import pg from 'pg';
import { ListenAll, ListenerHeartbeat } from './queries/database.js';

const LISTEN_RETRY_MS = 1_000;
const CLOSE_GRACE_MS = 1_000;
/** How often the LISTEN connection is asked to answer; see the class comment. */
const LISTEN_HEARTBEAT_INTERVAL_MS = 5_000;
/** How long a heartbeat may go unanswered before the connection counts as lost. */
const LISTEN_HEARTBEAT_TIMEOUT_MS = 3_000;

interface ListenerOptions {
  /** The connection settings; the listener holds one connection of its own for the life of the process. */
  config: pg.ClientConfig;
  onNotification: (channel: string, payload: string | undefined) => void;
  /**
   * 'connected' once LISTEN succeeded (notifications from then on arrive), 'lost' as soon as the
   * connection is known to be gone (some may have been missed). Called again on every reconnect.
   */
  onState: (state: 'connected' | 'lost', error?: unknown) => void;
  heartbeatIntervalMs?: number;
  heartbeatTimeoutMs?: number;
}

/**
 * The LISTEN connection, kept up for the life of the store: it reconnects by itself, every
 * LISTEN_RETRY_MS until it succeeds.
 *
 * A connection that breaks with a reset or a FATAL error says so at once. One whose network path
 * goes silent (a dropped route, a middlebox that forgets the connection, a host that vanished)
 * says nothing: a connection that only listens never writes, so TCP has nothing to retransmit and
 * no error comes, while notifications stop arriving. TCP keepalive (set by the caller) would notice
 * after its idle delay plus ten probes, but only while no bytes are waiting for an answer. So the
 * listener also sends a heartbeat query every heartbeatIntervalMs and counts the connection lost
 * when one goes unanswered for heartbeatTimeoutMs: a silent drop is noticed within the interval
 * plus the timeout (8 s by default), and the owner stops trusting what the notifications kept
 * fresh until LISTEN succeeds again.
 */
export class PostgresListener {
  private client: pg.Client | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly options: ListenerOptions) {}

  /** Resolves after the first attempt, connected or not (it keeps trying in the background). */
  start(): Promise<void> {
    return this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopHeartbeat();
    const client = this.client;
    this.client = null;
    if (!client) return;
    client.removeAllListeners();
    client.on('error', () => {});
    // A healthy connection says goodbye at once; one that went silent since the last heartbeat
    // would keep end() waiting for an answer, so it is cut after a moment.
    const cut = setTimeout(() => client.connection.stream.destroy(), CLOSE_GRACE_MS);
    await client.end().catch(() => {});
    clearTimeout(cut);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client(this.options.config);
    this.client = client;
    client.on('error', (error) => this.lose(client, error));
    client.on('end', () => this.lose(client, new Error('the LISTEN connection ended')));
    client.on('notification', (message) => this.options.onNotification(message.channel, message.payload));
    try {
      await client.connect();
      await client.query(ListenAll);
    } catch (error) {
      this.lose(client, error);
      return;
    }
    if (this.client !== client) return;
    this.options.onState('connected');
    this.scheduleHeartbeat(client);
  }

  private scheduleHeartbeat(client: pg.Client): void {
    this.heartbeat = setTimeout(() => void this.beat(client), this.options.heartbeatIntervalMs ?? LISTEN_HEARTBEAT_INTERVAL_MS);
    this.heartbeat.unref();
  }

  private async beat(client: pg.Client): Promise<void> {
    if (this.client !== client) return;
    const timeoutMs = this.options.heartbeatTimeoutMs ?? LISTEN_HEARTBEAT_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the LISTEN connection did not answer a heartbeat within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([client.query(ListenerHeartbeat), timedOut]);
    } catch (error) {
      this.lose(client, error);
      return;
    } finally {
      clearTimeout(timer);
    }
    if (this.client === client) this.scheduleHeartbeat(client);
  }

  /** Once per connection: report it lost, throw it away and try again shortly. */
  private lose(client: pg.Client, error: unknown): void {
    if (this.client !== client) return;
    this.client = null;
    this.stopHeartbeat();
    // Judged dead or broken: closed at once, without waiting for a goodbye it may never answer.
    client.removeAllListeners();
    client.on('error', () => {});
    client.connection.stream.destroy();
    this.options.onState('lost', error);
    if (!this.closed) setTimeout(() => void this.connect(), LISTEN_RETRY_MS).unref();
  }

  private stopHeartbeat(): void {
    if (this.heartbeat) clearTimeout(this.heartbeat);
    this.heartbeat = null;
  }
}
