/**
 * The hardening gate over the rendered chart (infra/deploy/check.sh): reads checkov's JSON report of the
 * renderings (`checkov --framework kubernetes --output json`) and the reviewed exceptions file
 * (helm/selfplay/lint-exceptions.yaml), prints every finding that no exception excuses and every exception that
 * excuses nothing (a fixed finding leaves a stale excuse behind), and exits 1 if there is either.
 *   node --import tsx infra/deploy/check-hardening.ts CHECKOV_JSON EXCEPTIONS_YAML
 */
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { z } from 'zod';

/** One excused check: for the rendered objects its globs name (`Kind/name`, `*` any run of characters). */
const ExceptionSchema = z.strictObject({
  check: z.string().regex(/^CKV2?_K8S_\d+$/, 'a checkov Kubernetes check id (CKV_K8S_n or CKV2_K8S_n)'),
  title: z.string().min(1),
  resources: z.array(z.string().regex(/^[A-Za-z*]+\/[a-z0-9*-]+$/, 'a Kind/name glob')).min(1),
  reason: z.string().min(20, 'say why the finding is acceptable, and what would lift it'),
});
export type LintException = z.infer<typeof ExceptionSchema>;
export const ExceptionsSchema = z.array(ExceptionSchema);

export interface Finding {
  check: string;
  title: string;
  /** `Kind/name` of the rendered object. */
  resource: string;
  file: string;
}

interface CheckovReport {
  check_type: string;
  summary: { passed: number; failed: number; parsing_errors: number };
  results: {
    failed_checks?: { check_id: string; check_name: string; resource: string; file_path: string }[];
  };
}

/**
 * The failed checks of checkov's report (one report, or a list of them when several frameworks ran), each
 * resource as `Kind/name` (checkov names it `Kind.namespace.name[.labels]`). Throws on a report that parsed
 * nothing or checked nothing, so a rendering checkov cannot read never passes as clean.
 */
export function findingsOf(report: unknown): Finding[] {
  const reports = (Array.isArray(report) ? report : [report]) as CheckovReport[];
  const k8s = reports.filter((r) => r?.check_type === 'kubernetes');
  if (k8s.length === 0)
    throw new Error('checkov report: no kubernetes results (did it find the renderings?)');
  return k8s.flatMap((r) => {
    if (r.summary.parsing_errors > 0) {
      throw new Error(`checkov report: ${r.summary.parsing_errors} rendering(s) could not be parsed`);
    }
    if (r.summary.passed + r.summary.failed === 0) throw new Error('checkov report: no check ran');
    return (r.results.failed_checks ?? []).map((f) => {
      const [kind, , name] = f.resource.split('.');
      return { check: f.check_id, title: f.check_name, resource: `${kind}/${name}`, file: f.file_path };
    });
  });
}

function globMatches(glob: string, value: string): boolean {
  const pattern = glob.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${pattern.join('.*')}$`).test(value);
}

function excuses(e: LintException, f: Finding): boolean {
  return e.check === f.check && e.resources.some((glob) => globMatches(glob, f.resource));
}

export interface Verdict {
  unexcused: Finding[];
  /** Exceptions (with their index in the file) that excuse no finding. */
  stale: { index: number; exception: LintException }[];
  excused: number;
}

export function judge(findings: readonly Finding[], exceptions: readonly LintException[]): Verdict {
  const unexcused = findings.filter((f) => !exceptions.some((e) => excuses(e, f)));
  const stale = exceptions
    .map((exception, index) => ({ index, exception }))
    .filter(({ exception }) => !findings.some((f) => excuses(exception, f)));
  return { unexcused, stale, excused: findings.length - unexcused.length };
}

function main(): void {
  const [reportPath, exceptionsPath] = process.argv.slice(2);
  if (!reportPath || !exceptionsPath) {
    console.error('usage: check-hardening.ts CHECKOV_JSON EXCEPTIONS_YAML');
    process.exit(2);
  }
  const findings = findingsOf(JSON.parse(readFileSync(reportPath, 'utf8')));
  const parsed = ExceptionsSchema.safeParse(parse(readFileSync(exceptionsPath, 'utf8')));
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      console.error(`check-hardening: ${exceptionsPath} [${issue.path.join('.')}]: ${issue.message}`);
    }
    process.exit(1);
  }
  const { unexcused, stale, excused } = judge(findings, parsed.data);
  for (const f of unexcused) {
    console.error(`check-hardening: ${f.check} ${f.resource} (${f.file}): ${f.title}`);
  }
  for (const { index, exception } of stale) {
    console.error(
      `check-hardening: exception ${index + 1} (${exception.check} for ${exception.resources.join(', ')}) ` +
        `excuses no finding any more: remove it from ${exceptionsPath}`,
    );
  }
  console.log(
    `check-hardening: ${findings.length} finding(s), ${excused} excused by ${exceptionsPath}, ` +
      `${unexcused.length} not excused, ${stale.length} stale exception(s)`,
  );
  if (unexcused.length > 0 || stale.length > 0) process.exit(1);
}

if (require.main === module) main();
