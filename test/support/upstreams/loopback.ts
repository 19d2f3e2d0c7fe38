// How every loopback upstream of the tests listens and stops: on 127.0.0.1 at a port the OS picks
// (so test processes running side by side never collide), and stopped with its idle keep-alive
// connections ended too, so a suite's `close()` does not wait for a client's socket to time out.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Starts `server` on a free loopback port; resolves once it listens. */
export async function listenOnLoopback(server: Server): Promise<{ port: number; origin: string }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return { port, origin: `http://127.0.0.1:${port}` };
}

/** Stops `server`: no new connections, the idle ones ended; resolves when it has closed. */
export function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
}
