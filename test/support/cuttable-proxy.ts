import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

interface ProxiedConnection {
  client: Socket;
  upstream: Socket;
  /** The client's first bytes: for PostgreSQL, the startup packet, which names the application. */
  hello: Buffer | null;
  /** Carries nothing either way, and says nothing about it. */
  silent: boolean;
}

/**
 * A TCP proxy to a real server that a test can cut (every connection dropped, new ones refused
 * at once) and restore: a network cut between Punctual and its database, without disturbing
 * anything else that uses the same database.
 *
 * It can also go silent (silence()): a network path that goes dark without a reset, as when a
 * route is dropped or a middlebox forgets the connection. Bytes stop flowing but no socket is
 * closed, so the client sees no error, only silence.
 */
export class CuttableProxy {
  private up = true;
  /** While set, connections whose hello it matches (existing and new) are silent. */
  private silenceMatch: ((hello: Buffer) => boolean) | null = null;
  private readonly connections = new Set<ProxiedConnection>();
  private readonly server = createServer((client) => {
    if (!this.up) {
      client.destroy();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    const connection: ProxiedConnection = { client, upstream, hello: null, silent: false };
    this.connections.add(connection);
    // A silent connection hears nothing from either end, not even that the other one closed: its
    // sockets stay open until restore(), cut() or close().
    for (const socket of [client, upstream]) {
      socket.on('error', () => connection.silent || this.drop(connection));
      socket.on('close', () => connection.silent || this.drop(connection));
    }
    client.on('data', (chunk: Buffer) => {
      if (connection.hello === null) {
        connection.hello = chunk;
        if (this.silenceMatch?.(chunk)) connection.silent = true;
      }
      this.forward(connection, chunk, client, upstream);
    });
    upstream.on('data', (chunk: Buffer) => this.forward(connection, chunk, upstream, client));
    client.on('end', () => connection.silent || upstream.end());
    upstream.on('end', () => connection.silent || client.end());
  });
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  private drop(connection: ProxiedConnection): void {
    connection.client.destroy();
    connection.upstream.destroy();
    this.connections.delete(connection);
  }

  /** Passes a chunk on, holding the sender back while the receiver's buffer is full; a silent connection drops it. */
  private forward(connection: ProxiedConnection, chunk: Buffer, from: Socket, to: Socket): void {
    if (connection.silent) return;
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', () => from.resume());
    }
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  cut(): void {
    this.up = false;
    for (const connection of this.connections) this.drop(connection);
  }

  /**
   * Silences the connections whose first bytes `match` accepts (all by default), open ones and
   * those opened from now on, until restore(). For PostgreSQL, match on the application name
   * in the startup packet to silence one kind of connection only.
   */
  silence(match: (hello: Buffer) => boolean = () => true): void {
    this.silenceMatch = match;
    for (const connection of this.connections) {
      if (connection.hello === null || match(connection.hello)) connection.silent = true;
    }
  }

  /**
   * Lets new connections through again. Silent connections are closed: whatever was lost in them
   * leaves them unusable, as the operating system would find out sooner or later.
   */
  restore(): void {
    this.up = true;
    this.silenceMatch = null;
    for (const connection of this.connections) if (connection.silent) this.drop(connection);
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
