import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { runIdRuleProblem, type RunConfig } from '../config/schema';
import { runIdProblem } from '../workflows/selfPlayRun';
import { applySet } from './args';

/** What `selfplay start` builds its config from, in increasing precedence. */
export interface StartConfigSources {
  /** `--config FILE`: JSON or YAML. */
  file?: string | undefined;
  /** `--recipe NAME`: picks the preset. */
  recipe?: string | undefined;
  /** `--set key=value`, applied in order. */
  sets?: readonly string[];
}

/** The run config `selfplay start` submits: the file, then `--recipe`, then each `--set`. */
export function startConfig({ file, recipe, sets = [] }: StartConfigSources): Record<string, unknown> {
  const config = file ? readConfigFile(file) : {};
  if (recipe) config.recipe = recipe;
  for (const assignment of sets) applySet(config, assignment);
  return config;
}

/**
 * The id `selfplay start` gives the run (its workflow id): `--id`, else the config's runId, else
 * `{recipe}-{time}`. Refused, naming the rule, when it is no run id or is not the config's runId: the workflow
 * would refuse it too, after it had been started.
 */
export function startRunId(config: RunConfig, id: string | undefined, now: Date): string {
  const runId = id ?? config.runId ?? `${config.recipe}-${now.toISOString().replace(/[:.]/g, '-')}`;
  const problem = runIdRuleProblem(runId) ?? runIdProblem(config.runId ?? runId, runId);
  if (problem) throw new Error(`${id === undefined ? 'invalid run config' : '--id'}: ${problem}`);
  return runId;
}

const FORMATS = ['.json', '.yaml', '.yml'];

/**
 * Reads a run config file, JSON or YAML by its extension (not by sniffing, so a broken JSON file is reported
 * as broken JSON rather than read leniently as YAML). The top level must be a mapping.
 */
export function readConfigFile(file: string): Record<string, unknown> {
  const ext = path.extname(file).toLowerCase();
  if (!FORMATS.includes(ext))
    throw new Error(`--config ${file}: unknown format "${ext}"; use a ${FORMATS.join(', ')} file`);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(
      `--config ${file}: cannot read it (${(err as NodeJS.ErrnoException).code}); check the path`,
    );
  }
  const value = ext === '.json' ? parseJson(file, text) : parseYamlFile(file, text);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new Error(
      `--config ${file}: expected a mapping at the top level, such as ${ext === '.json' ? '{"recipe": "spice"}' : '"recipe: spice"'}; got ${Array.isArray(value) ? 'a list' : JSON.stringify(value)}`,
    );
  return value as Record<string, unknown>;
}

function parseJson(file: string, text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new Error(
      `--config ${file}: invalid JSON: ${(err as Error).message}; fix it, or write the config as YAML`,
    );
  }
}

function parseYamlFile(file: string, text: string): unknown {
  try {
    // YAML 1.2 core schema: `no`/`off` stay strings, duplicate keys are errors.
    return parseYaml(text) as unknown;
  } catch (err) {
    throw new Error(`--config ${file}: invalid YAML: ${(err as Error).message}`);
  }
}
