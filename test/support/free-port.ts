import { createServer } from 'node:net';

/** A TCP port free right now on 127.0.0.1 (the OS picks it), so parallel test servers never collide. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the port the OS assigned'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}
