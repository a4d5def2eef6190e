/* eslint-disable @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return --
   walks parsed YAML of any shape (`Obj`), checking each field it reads */
/**
 * Offline checks of the single-host compose file (`tsx infra/deploy/check-compose.ts [compose.yaml]`), where
 * docker is not at hand: the YAML parses (anchors and merge keys resolved as compose does), every service has an
 * image, each build names a Dockerfile that exists in its context, `depends_on` names services that exist with
 * a condition compose knows, named volumes are declared, commands are lists of strings, the GPU services reserve
 * a device, and every worker answers a health check. Prints each problem; exits 1 if any.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const CONDITIONS = ['service_started', 'service_healthy', 'service_completed_successfully'];

export function checkCompose(compose: Obj, dir: string): string[] {
  const problems: string[] = [];
  const services: Obj = compose.services ?? {};
  const volumes = new Set(Object.keys(compose.volumes ?? {}));
  if (Object.keys(services).length === 0) problems.push('no services');
  for (const [name, s] of Object.entries(services)) {
    const at = `service ${name}`;
    if (!s.image) problems.push(`${at}: no image`);
    if (s.build) {
      const context = path.resolve(dir, s.build.context ?? '.');
      const dockerfile = path.resolve(context, s.build.dockerfile ?? 'Dockerfile');
      if (!existsSync(dockerfile)) problems.push(`${at}: Dockerfile ${dockerfile} does not exist`);
    }
    for (const [dep, spec] of Object.entries<Obj>(s.depends_on ?? {})) {
      if (!services[dep]) problems.push(`${at}: depends on unknown service ${dep}`);
      if (!CONDITIONS.includes(spec?.condition))
        problems.push(`${at}: depends_on ${dep} has no known condition`);
    }
    for (const v of s.volumes ?? []) {
      const source = typeof v === 'string' ? v.split(':')[0] : v.source;
      if (source && !source.startsWith('.') && !source.startsWith('/') && !volumes.has(source)) {
        problems.push(`${at}: volume ${source} is not declared under volumes`);
      }
    }
    for (const key of ['command', 'entrypoint']) {
      const value = s[key];
      if (Array.isArray(value) && !value.every((x) => typeof x === 'string')) {
        problems.push(`${at}: ${key} must be a list of strings (quote numbers)`);
      }
    }
    const devices = s.deploy?.resources?.reservations?.devices ?? [];
    if (/kernel|vllm|sglang/.test(name) && !devices.some((d: Obj) => d.capabilities?.includes('gpu'))) {
      problems.push(`${at}: a GPU service without a GPU reservation`);
    }
    if (Array.isArray(s.command) && s.command[0] === 'workers/main.ts' && !s.healthcheck?.test) {
      problems.push(`${at}: a worker without a health check`);
    }
  }
  return problems;
}

function main(): void {
  const file = path.resolve(process.argv[2] ?? path.join(__dirname, 'compose.yaml'));
  const compose = parse(readFileSync(file, 'utf8'), { merge: true }) as Obj;
  const problems = checkCompose(compose, path.dirname(file));
  for (const p of problems) console.error(`check-compose: ${p}`);
  console.log(
    `check-compose: ${Object.keys(compose.services ?? {}).length} services, ${problems.length} problem(s)`,
  );
  if (problems.length > 0) process.exit(1);
}

if (require.main === module) main();
