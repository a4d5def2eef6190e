import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { LocalStore } from '../../activities/clients/storage';
import { InferencePool } from '../../activities/clients/inference';
import { RECIPES } from '../../activities/recipes';
import { commitActivities } from '../../activities/stages/commit';
import { ensureServersAt } from '../../activities/stages/sync';
import { endpointFor, loadWorkerEnv, trainerUrlFor } from '../../config/env';
import { isUnder, parseBindings } from '../../config/endpoint-bindings';
import { startRefusal } from '../../config/run-access';
import { resolveRunConfig, type RunConfig } from '../../config/schema';

const TOKEN = 'kernel-token-0123456789abcdef';

/** A server on a loopback port that answers 200 `{"data":[]}` and remembers every Authorization header. */
async function listener(): Promise<{ url: string; seen: string[]; close(): Promise<void> }> {
  const seen: string[] = [];
  const server: Server = createServer((req, res) => {
    seen.push(req.headers.authorization ?? '');
    res.setHeader('content-type', 'application/json');
    res.end('{"data":[]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const resolved = (input: object): RunConfig => {
  const r = resolveRunConfig({ recipe: 'spice', ...input });
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};

const failureOf = async (attempt: () => unknown): Promise<ApplicationFailure> => {
  try {
    await attempt();
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    return err as ApplicationFailure;
  }
  throw new Error('expected a refusal');
};

const depsFor = (env: ReturnType<typeof loadWorkerEnv>) => ({
  store: new LocalStore(mkdtempSync(path.join(os.tmpdir(), 'bindings-'))),
  env,
  inference: new InferencePool(),
  recipes: RECIPES,
});

describe('credentials bound to endpoints', () => {
  let x: Awaited<ReturnType<typeof listener>>;
  beforeEach(async () => (x = await listener()));
  afterEach(() => x.close());

  // The workers' own kernel is elsewhere; the run config points at x.
  const vars = {
    SELFPLAY_KERNEL_TOKEN: TOKEN,
    SELFPLAY_TRAINER_URL: 'http://kernel:8000',
    SELFPLAY_INFERENCE_URL: 'http://kernel:8000/v1',
    SELFPLAY_INFERENCE_API_KEY: TOKEN,
    SELFPLAY_INFERENCE_MODEL: 'policy',
  };

  test('a run config cannot send the kernel token to a server it names', async () => {
    const env = loadWorkerEnv(vars);
    const stolen = resolved({
      runId: 'thief',
      inference: { default: { baseUrl: `${x.url}/v1`, model: 'm', apiKeyEnv: 'SELFPLAY_KERNEL_TOKEN' } },
      training: { trainerUrl: x.url },
      weightSync: { engine: 'kernel', servers: [x.url] },
    });

    // Refused at start: by the CLI with its environment, and by the run's first activity with the workers'.
    expect(startRefusal(stolen, vars)).toContain(
      `inference.default (${x.url}/v1) names its credential SELFPLAY_KERNEL_TOKEN, which this worker sends only to ` +
        `http://kernel:8000; ${x.url}/v1 is not under them`,
    );
    const deps = depsFor(env);
    const acts = commitActivities(deps);
    const atStart = await failureOf(() => acts.loadRunStart({ runId: 'thief', config: stolen }));
    expect(atStart.message).toContain('the run config reaches beyond this deployment');
    expect(atStart.message).toContain(`training.trainerUrl ${x.url} is not among this worker's servers`);
    expect(atStart.message).toContain(`weight-sync server ${x.url} is not among this worker's servers`);

    // Refused where each is used, for a workflow started some other way.
    expect((await failureOf(() => endpointFor('challenger', stolen, env))).message).toContain(
      'names its credential SELFPLAY_KERNEL_TOKEN, which this worker sends only to http://kernel:8000',
    );
    await failureOf(() => trainerUrlFor(stolen, env, 'policy'));
    const snapshot = { policy: 'policy', version: 1, uri: 's3://b/snap', format: 'full' as const };
    await failureOf(() => ensureServersAt(deps, stolen, snapshot, new AbortController().signal));
    expect(x.seen).toEqual([]);
  });

  test('a server the environment binds gets its credential, and only that one', async () => {
    const env = loadWorkerEnv({ ...vars, SELFPLAY_CREDENTIAL_BINDINGS: `SELFPLAY_KERNEL_TOKEN=${x.url}` });
    const config = resolved({ runId: 'r', weightSync: { engine: 'kernel', servers: [x.url], attempts: 1 } });
    const snapshot = { policy: 'policy', version: 1, uri: 's3://b/snap', format: 'full' as const };
    // The listener serves no model, so the sync fails after asking; what matters is what it was sent.
    await ensureServersAt(depsFor(env), config, snapshot, new AbortController().signal).catch(
      () => undefined,
    );
    expect(x.seen.length).toBeGreaterThan(0);
    expect(new Set(x.seen)).toEqual(new Set([`Bearer ${TOKEN}`]));
    expect(trainerUrlFor(resolved({ training: { trainerUrl: x.url } }), env, 'policy')).toBe(x.url);
    expect(endpointFor('challenger', resolved({}), env).apiKey).toBe(TOKEN);
  });
});

describe('binding declarations', () => {
  test('prefixes match parsed, at a path-segment boundary', () => {
    const prefix = 'http://kernel:8000/gw';
    expect(isUnder('http://kernel:8000/gw/v1/models', prefix)).toBe(true);
    expect(isUnder('http://kernel:8000/gw', prefix)).toBe(true);
    for (const url of [
      'http://kernel:8000/gwx',
      'http://kernel:8000@evil/gw/v1',
      'http://user:pw@kernel:8000/gw/v1',
      'http://kernel:80001/gw',
      'http://kernel:8000.evil/gw',
      'https://kernel:8000/gw',
      'http://kernel:8000/gw/../other',
    ]) {
      expect([url, isUnder(url, prefix)]).toEqual([url, false]);
    }
  });

  test('the declaration names credential variables and URLs, or the worker does not start', () => {
    expect(
      parseBindings('SELFPLAY_KERNEL_TOKEN=http://a:1, http://b:2;\nSELFPLAY_X_API_KEY=http://c'),
    ).toEqual([
      { credential: 'SELFPLAY_KERNEL_TOKEN', prefix: 'http://a:1' },
      { credential: 'SELFPLAY_KERNEL_TOKEN', prefix: 'http://b:2' },
      { credential: 'SELFPLAY_X_API_KEY', prefix: 'http://c' },
    ]);
    expect(() => loadWorkerEnv({ SELFPLAY_CREDENTIAL_BINDINGS: 'AWS_SECRET_ACCESS_KEY=http://a' })).toThrow(
      'SELFPLAY_CREDENTIAL_BINDINGS: "AWS_SECRET_ACCESS_KEY=http://a" is not NAME=PREFIX',
    );
    expect(() =>
      loadWorkerEnv({ SELFPLAY_CREDENTIAL_BINDINGS: 'SELFPLAY_KERNEL_TOKEN=http://u:p@a' }),
    ).toThrow('is not an http(s) URL without credentials');
  });

  test('one server bound to two different set credentials is a contradiction, named', () => {
    const env = loadWorkerEnv({
      SELFPLAY_KERNEL_TOKEN: 'a'.repeat(16),
      SELFPLAY_OTHER_TOKEN: 'b'.repeat(16),
      SELFPLAY_CREDENTIAL_BINDINGS: 'SELFPLAY_KERNEL_TOKEN=http://k:1;SELFPLAY_OTHER_TOKEN=http://k:1',
    });
    expect(() =>
      trainerUrlFor(resolved({ training: { trainerUrl: 'http://k:1' } }), env, 'policy'),
    ).not.toThrow();
    expect(() =>
      endpointFor('challenger', resolved({}), { ...env, inferenceUrl: 'http://k:1/v1', inferenceModel: 'm' }),
    ).toThrow('http://k:1/v1 is bound to SELFPLAY_KERNEL_TOKEN and SELFPLAY_OTHER_TOKEN');
  });
});
