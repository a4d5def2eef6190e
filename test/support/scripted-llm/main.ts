import { parseArgs } from 'node:util';
import { announceAndServe, runMain } from '../serve-cli';
import { startScriptedLlm } from './server';

/**
 * Starts the scripted LLM server as its own process, for stacks where the workers run apart from the test:
 *
 *   tsx test/support/scripted-llm/main.ts --port 0 [--host H] [--capacity N] [--latency-ms N] [--config JSON]
 *     [--sampler-policy NAME]   (answers weight sync as the kernel's sampler of NAME; see ScriptedLlmOptions)
 *
 * Prints one JSON line `{"url": ..., "port": ...}` once listening; SIGTERM or SIGINT closes it.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      capacity: { type: 'string' },
      'latency-ms': { type: 'string' },
      config: { type: 'string', default: '{}' },
      'sampler-policy': { type: 'string' },
    },
  });
  const patch = JSON.parse(values.config) as Record<string, unknown>;
  const llm = await startScriptedLlm({
    ...patch,
    port: Number(values.port),
    host: values.host,
    ...(values.capacity !== undefined ? { capacity: Number(values.capacity) } : {}),
    ...(values['latency-ms'] !== undefined ? { latencyMs: Number(values['latency-ms']) } : {}),
    ...(values['sampler-policy'] !== undefined ? { samplerPolicy: values['sampler-policy'] } : {}),
  });
  announceAndServe(llm);
}

runMain(main);
