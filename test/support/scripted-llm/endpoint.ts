import { InferenceEndpoint, type EndpointSettings } from '../../../activities/clients/inference';
import type { ScriptedLlm } from './server';

/** The real inference client pointed at the scripted server, serving its default model. */
export const scriptedEndpoint = (
  llm: ScriptedLlm,
  overrides: Partial<EndpointSettings> = {},
): InferenceEndpoint =>
  new InferenceEndpoint({
    baseUrl: llm.url,
    model: 'scripted-policy',
    apiKey: 'EMPTY',
    maxConcurrentCompletions: 8,
    supportsN: true,
    requestTimeoutMs: 2_000,
    maxRetries: 0,
    ...overrides,
  });
