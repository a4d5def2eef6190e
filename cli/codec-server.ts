import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';

/**
 * The codec server the Temporal Web UI (and `temporal workflow show --codec-endpoint`) calls to show
 * encrypted payloads decrypted: `POST /encode` and `POST /decode`, each taking and answering
 * `{"payloads": [{"metadata": {name: base64}, "data": base64}]}` (Temporal's remote codec protocol).
 *
 * Whoever reaches it can decrypt payloads, so it listens on loopback unless told otherwise, and answers
 * cross-origin requests only from the listed origins (the Web UI's, e.g. http://localhost:8233).
 */
export const DEFAULT_UI_ORIGIN = 'http://localhost:8233';
const MAX_BODY_BYTES = 64 * 1024 * 1024;

export interface CodecServerOptions {
  codec: PayloadCodec;
  host: string;
  port: number;
  /** Origins allowed to call it from a browser. */
  origins: readonly string[];
}

export interface RunningCodecServer {
  url: string;
  close(): Promise<void>;
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

export async function startCodecServer(options: CodecServerOptions): Promise<RunningCodecServer> {
  const server: Server = createServer((req, res) => void answer(options, req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function answer(options: CodecServerOptions, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const origin = req.headers.origin;
  if (origin !== undefined && options.origins.includes(origin)) {
    res.setHeader('access-control-allow-origin', origin);
    res.setHeader('access-control-allow-credentials', 'true');
    res.setHeader('vary', 'Origin');
  }
  if (req.method === 'OPTIONS') {
    res.setHeader('access-control-allow-methods', 'POST, OPTIONS');
    res.setHeader('access-control-allow-headers', 'content-type, x-namespace, authorization');
    res.writeHead(origin !== undefined && options.origins.includes(origin) ? 204 : 403).end();
    return;
  }
  const path = (req.url ?? '').split('?')[0];
  if (req.method !== 'POST' || (path !== '/encode' && path !== '/decode')) {
    return reply(res, 404, { error: `no route for ${req.method} ${path}: POST /encode or POST /decode` });
  }
  let payloads: Payload[];
  try {
    payloads = parsePayloads(await readBody(req));
  } catch (err) {
    return reply(res, 400, { error: (err as Error).message });
  }
  try {
    const done =
      path === '/encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
    reply(res, 200, { payloads: done.map(toJson) });
  } catch (err) {
    reply(res, 400, { error: (err as Error).message });
  }
}

function reply(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error(`the body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString();
}

function parsePayloads(text: string): Payload[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error('the body is not JSON; expected {"payloads": [...]}');
  }
  const list = (body as { payloads?: unknown } | null)?.payloads;
  if (!Array.isArray(list)) throw new Error('the body has no "payloads" array');
  return list.map((p: JsonPayload, i) => {
    const meta = p?.metadata ?? {};
    if (typeof meta !== 'object' || Object.values(meta).some((v) => typeof v !== 'string')) {
      throw new Error(`payloads[${i}].metadata: expected an object of base64 strings`);
    }
    if (p?.data !== undefined && typeof p.data !== 'string') {
      throw new Error(`payloads[${i}].data: expected a base64 string`);
    }
    return {
      metadata: Object.fromEntries(Object.entries(meta).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
      data: Buffer.from(p?.data ?? '', 'base64'),
    };
  });
}

function toJson(payload: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(
      Object.entries(payload.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')]),
    ),
    data: Buffer.from(payload.data ?? []).toString('base64'),
  };
}
