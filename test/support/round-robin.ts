import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { closer, listen } from './http-json';

/**
 * A Service in front of several inference replicas, as Kubernetes gives the rollout workers: requests go round
 * robin; a replica that refuses the connection (killed, restarting) is skipped for the next one; one that dies
 * with the request in flight answers 502, which the client retries like any 5xx.
 */
export interface RoundRobin {
  /** The proxy's base URL with `/v1`, like the replicas'. */
  url: string;
  /** Requests answered by each backend, by its origin. */
  served(): Record<string, number>;
  close(): Promise<void>;
}

export async function startRoundRobin(backends: readonly string[]): Promise<RoundRobin> {
  const origins = backends.map((b) => new URL(b).origin);
  const served: Record<string, number> = Object.fromEntries(origins.map((o) => [o, 0]));
  let next = 0;

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, tries: number): void => {
    const origin = origins[next++ % origins.length] as string;
    const upstream = request(
      `${origin}${req.url ?? '/'}`,
      { method: req.method, headers: { ...req.headers, host: new URL(origin).host } },
      (answer) => {
        served[origin] = (served[origin] ?? 0) + 1;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.once('error', () => res.destroy());
      },
    );
    upstream.once('error', (err: NodeJS.ErrnoException) => {
      if (res.headersSent) return void res.destroy();
      if (err.code === 'ECONNREFUSED' && tries + 1 < origins.length)
        return forward(req, res, body, tries + 1);
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { message: `replica ${origin}: ${err.message}`, type: 'server_error' } }),
      );
    });
    upstream.end(body);
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => forward(req, res, Buffer.concat(chunks), 0));
  });
  const port = await listen(server, 0, '127.0.0.1');
  const closeServer = closer(server);
  return { url: `http://127.0.0.1:${port}/v1`, served: () => ({ ...served }), close: closeServer };
}
