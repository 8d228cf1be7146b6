import { connect, createServer, type AddressInfo, type Socket } from 'node:net';

/**
 * A TCP proxy to a real server that a test can cut (every connection dropped, new ones refused
 * at once) and restore: a network cut between Punctual and its database, without disturbing
 * anything else that uses the same database.
 */
export class CuttableProxy {
  private up = true;
  private readonly sockets = new Set<Socket>();
  private readonly server = createServer((client) => {
    if (!this.up) {
      client.destroy();
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  cut(): void {
    this.up = false;
    for (const socket of this.sockets) socket.destroy();
  }

  restore(): void {
    this.up = true;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
