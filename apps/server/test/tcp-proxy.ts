import type { AddressInfo } from 'node:net';
import { createConnection, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 that can stop passing data, as a database that hangs (SIGSTOP) or a network
 * that black-holes does: while hung, bytes are held in both directions and new connections get no
 * answer; on resume, everything held goes through.
 */
export interface HangingProxy {
  port: number;
  hang(): void;
  resume(): void;
  close(): Promise<void>;
}

export async function startHangingProxy(target: { host: string; port: number }): Promise<HangingProxy> {
  let hung = false;
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      if (hung) held.push(() => to.write(chunk));
      else to.write(chunk);
    });
    from.on('close', () => to.destroy());
    from.on('error', () => to.destroy());
  };
  const connect = (client: Socket) => {
    const upstream = createConnection(target);
    sockets.add(upstream);
    upstream.on('close', () => sockets.delete(upstream));
    forward(client, upstream);
    forward(upstream, client);
  };
  const server = createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    if (hung) held.push(() => connect(client));
    else connect(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hang() {
      hung = true;
    },
    resume() {
      hung = false;
      for (const release of held.splice(0)) release();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
