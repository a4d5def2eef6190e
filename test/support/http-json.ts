import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/**
 * The little HTTP plumbing the test-double servers share (node's built-in http only): JSON bodies in and
 * out, listening on a port the OS may pick, and a close that does not wait for idle keep-alive sockets.
 */

/** A request body that is too large or not JSON: the caller answers 4xx. */
export class BodyError extends Error {
  constructor(
    readonly status: 400 | 413,
    message: string,
  ) {
    super(message);
  }
}

export async function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limitBytes) throw new BodyError(413, `request body exceeds ${limitBytes} bytes`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

export async function readJson(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const text = (await readBody(req, limitBytes)).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new BodyError(400, `request body is not valid JSON: ${(err as Error).message}`);
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Listens and resolves with the bound port (port 0 lets the OS choose one). */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      if (address === null || typeof address === 'string') reject(new Error('server has no TCP address'));
      else resolve(address.port);
    });
  });
}

/**
 * A close for the server: stops accepting, drops every open connection (keep-alive ones included) and waits
 * for the close. Calling it again returns the same promise, so a test may close a server it already closed.
 */
export function closer(server: Server): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () =>
    (closing ??= new Promise((resolve, reject) => {
      server.close((err) => (err ? reject(err) : resolve()));
      server.closeAllConnections();
    }));
}

/** A zod issue path such as `['batch', 'sha256']` as `batch.sha256`, so an error names the bad field. */
export function fieldPath(path: ReadonlyArray<PropertyKey>): string {
  return path.length === 0 ? '(body)' : path.map(String).join('.');
}
