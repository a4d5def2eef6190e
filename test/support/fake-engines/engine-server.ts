import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { BodyError, closer, fieldPath, listen, readJson, sendJson } from '../http-json';

/**
 * What the fake inference engines share: JSON requests checked and recorded, faults a test can inject
 * (fail the next N requests to a path with a 5xx, or never answer a path), and a close that also drops
 * requests left hanging.
 */

export interface RecordedRequest {
  method: string;
  path: string;
  body: unknown;
  /** The `x-selfplay-*` headers (what a scripted upstream needs to be told). */
  headers?: Record<string, string>;
}

export interface Reply {
  status: number;
  json?: unknown;
  text?: string;
}

/** Answers one checked request; undefined means no such route (404). */
export type Route = (request: RecordedRequest) => Reply | undefined | Promise<Reply | undefined>;

export interface FakeEngine {
  /** The OpenAI base URL samplers are configured with, `http://127.0.0.1:{port}/v1`. */
  url: string;
  /** Every request received, in order, faulty ones included. */
  requests: RecordedRequest[];
  calls(method: 'GET' | 'POST', path: string): RecordedRequest[];
  /** The next `count` requests to `path` answer `status` and have no effect. */
  failNext(path: string, count: number, status?: number): void;
  /** Requests to `path` are never answered (until close). */
  hang(path: string): void;
  close(): Promise<void>;
}

const BODY_LIMIT_BYTES = 1024 * 1024;

export async function startEngineServer(route: Route): Promise<FakeEngine> {
  const requests: RecordedRequest[] = [];
  const failures = new Map<string, { count: number; status: number }>();
  const hanging = new Set<string>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    let body: unknown;
    if (method === 'POST') {
      const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim();
      if (type !== 'application/json') {
        return sendJson(res, 400, errorBody(`Unsupported Media Type: only 'application/json' is allowed`));
      }
      body = await readJson(req, BODY_LIMIT_BYTES);
    }
    const selfplay = Object.entries(req.headers).filter(
      (entry): entry is [string, string] =>
        entry[0].startsWith('x-selfplay-') && typeof entry[1] === 'string',
    );
    const request = {
      method,
      path,
      body,
      ...(selfplay.length > 0 ? { headers: Object.fromEntries(selfplay) } : {}),
    };
    requests.push(request);
    if (hanging.has(path)) return;
    const failure = failures.get(path);
    if (failure && failure.count > 0) {
      failure.count--;
      return sendJson(res, failure.status, errorBody('injected failure'));
    }
    const reply = await route(request);
    if (!reply) return sendJson(res, 404, { detail: 'Not Found' });
    if (reply.text !== undefined) {
      res.writeHead(reply.status, { 'content-type': 'text/plain' });
      res.end(reply.text);
      return;
    }
    sendJson(res, reply.status, reply.json ?? {});
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof BodyError) sendJson(res, err.status, errorBody(err.message));
      else sendJson(res, 500, errorBody(String(err)));
    });
  });
  const port = await listen(server, 0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    calls: (method, path) => requests.filter((r) => r.method === method && r.path === path),
    failNext: (path, count, status = 503) => failures.set(path, { count, status }),
    hang: (path) => hanging.add(path),
    close: closer(server),
  };
}

/** The OpenAI-style error envelope vLLM and the kernel sampler answer with. */
export function errorBody(message: string, type = 'BadRequestError'): unknown {
  return { error: { message, type, param: null, code: null } };
}

/** The first issue of a failed zod parse as `field: message`. */
export function firstIssue(error: {
  issues: ReadonlyArray<{ path: PropertyKey[]; message: string }>;
}): string {
  const issue = error.issues[0];
  return issue ? `${fieldPath(issue.path)}: ${issue.message}` : 'invalid request';
}
