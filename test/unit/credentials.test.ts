import { ApplicationFailure } from '@temporalio/common';
import { resolveRunConfig, type RunConfig } from '../../config/schema';
import { endpointFor, loadWorkerEnv } from '../../config/env';
import { CREDENTIAL_NEEDS_URL, credentialsFromEnv } from '../../config/credentials';

const resolved = (input: object): RunConfig => {
  const r = resolveRunConfig({ recipe: 'spice', ...input });
  if (!r.ok) throw new Error(r.problems.join('; '));
  return r.config;
};
const problems = (input: object): string[] => {
  const r = resolveRunConfig({ recipe: 'spice', ...input });
  return r.ok ? [] : r.problems;
};

describe('per-endpoint credentials', () => {
  const env = loadWorkerEnv({
    SELFPLAY_INFERENCE_URL: 'http://env-server:8000/v1',
    SELFPLAY_INFERENCE_MODEL: 'base',
    SELFPLAY_INFERENCE_API_KEY: 'env-key',
    SELFPLAY_VLLM_API_KEY: 'vllm-key',
    SELFPLAY_JUDGE_TOKEN: 'judge-key',
    SELFPLAY_CREDENTIAL_BINDINGS:
      'SELFPLAY_VLLM_API_KEY=http://vllm:8000; SELFPLAY_JUDGE_TOKEN=http://judge:9000/v1; ' +
      'SELFPLAY_MISSING_API_KEY=http://x:8000',
    AWS_SECRET_ACCESS_KEY: 'never-sent',
  });

  test('each key goes only to the URL configured beside it', () => {
    const config = resolved({
      inference: {
        default: { baseUrl: 'http://vllm:8000/v1', model: 'base', apiKeyEnv: 'SELFPLAY_VLLM_API_KEY' },
        roles: {
          judge: {
            baseUrl: 'http://judge:9000/v1',
            model: 'j',
            apiKeyEnv: 'SELFPLAY_JUDGE_TOKEN',
            frozen: true,
          },
          reasoner: { baseUrl: 'http://open:8000/v1' },
        },
      },
    });
    expect(endpointFor('challenger', config, env)).toMatchObject({
      baseUrl: 'http://vllm:8000/v1',
      apiKey: 'vllm-key',
    });
    expect(endpointFor('judge', config, env)).toMatchObject({
      baseUrl: 'http://judge:9000/v1',
      apiKey: 'judge-key',
    });
    // A URL without a credential of its own gets none: neither the default's key nor the environment's.
    expect(endpointFor('reasoner', config, env)).toMatchObject({
      baseUrl: 'http://open:8000/v1',
      apiKey: 'EMPTY',
    });
    // The environment's URL gets the environment's key.
    expect(endpointFor('challenger', resolved({}), env)).toMatchObject({
      baseUrl: 'http://env-server:8000/v1',
      apiKey: 'env-key',
    });
  });

  test('a named credential the worker lacks fails non-retryably, naming it', () => {
    const config = resolved({
      inference: {
        default: { baseUrl: 'http://x:8000/v1', model: 'm', apiKeyEnv: 'SELFPLAY_MISSING_API_KEY' },
      },
    });
    let err: unknown;
    try {
      endpointFor('challenger', config, env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect((err as ApplicationFailure).nonRetryable).toBe(true);
    expect((err as Error).message).toBe(
      'inference endpoint http://x:8000/v1 of role "challenger" names its credential SELFPLAY_MISSING_API_KEY, ' +
        "which is not set on this worker: set SELFPLAY_MISSING_API_KEY in the worker's environment",
    );
  });

  test('the schema allows only SELFPLAY_…_API_KEY / _TOKEN names, and only beside a baseUrl', () => {
    expect(
      problems({
        inference: { default: { baseUrl: 'http://x/v1', apiKeyEnv: 'AWS_SECRET_ACCESS_KEY' } },
      }).join('\n'),
    ).toContain(
      'inference.default.apiKeyEnv: an environment variable named SELFPLAY_<NAME>_API_KEY or SELFPLAY_<NAME>_TOKEN',
    );
    expect(
      problems({ inference: { roles: { judge: { apiKeyEnv: 'SELFPLAY_JUDGE_TOKEN' } } } }).join('\n'),
    ).toContain(`inference.roles.judge.apiKeyEnv: ${CREDENTIAL_NEEDS_URL}`);
    expect(problems({ inference: { default: { apiKeyEnv: 'SELFPLAY_CODEC_KEYS' } } })).not.toEqual([]);
  });

  test('only credential variables are ever readable by name', () => {
    expect(
      credentialsFromEnv({
        SELFPLAY_KERNEL_TOKEN: 't',
        SELFPLAY_A_API_KEY: 'a',
        SELFPLAY_CODEC_KEYS: 'k',
        AWS_SECRET_ACCESS_KEY: 's',
        SELFPLAY_EMPTY_TOKEN: '',
      }),
    ).toEqual({ SELFPLAY_KERNEL_TOKEN: 't', SELFPLAY_A_API_KEY: 'a' });
  });
});
