import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { ExceptionsSchema, findingsOf, judge, type Finding } from '../../../infra/deploy/check-hardening';
import { checkManifests } from '../../../infra/deploy/check-manifests';

const ROOT = path.resolve(__dirname, '../../..');

const report = (failed: { check_id: string; resource: string }[], summary = {}) => ({
  check_type: 'kubernetes',
  summary: { passed: 10, failed: failed.length, parsing_errors: 0, ...summary },
  results: {
    failed_checks: failed.map((f) => ({
      ...f,
      check_name: `title of ${f.check_id}`,
      file_path: '/vllm.yaml',
    })),
  },
});
const finding = (check: string, resource: string): Finding => ({
  check,
  resource,
  title: `title of ${check}`,
  file: '/vllm.yaml',
});

describe('check-hardening', () => {
  test("reads checkov's failed checks as Kind/name, from one report or a list of them", () => {
    const one = report([
      { check_id: 'CKV_K8S_40', resource: 'StatefulSet.default.selfplay-kernel-policy' },
      { check_id: 'CKV2_K8S_6', resource: 'Pod.default.selfplay-minio.app.kubernetes.io/name-selfplay' },
    ]);
    expect(findingsOf(one)).toEqual([
      finding('CKV_K8S_40', 'StatefulSet/selfplay-kernel-policy'),
      finding('CKV2_K8S_6', 'Pod/selfplay-minio'),
    ]);
    expect(findingsOf([{ check_type: 'secrets', summary: {}, results: {} }, one])).toHaveLength(2);
  });

  test('a report that parsed nothing or checked nothing is an error, never a pass', () => {
    expect(() => findingsOf(report([], { parsing_errors: 1 }))).toThrow(
      /1 rendering\(s\) could not be parsed/,
    );
    expect(() => findingsOf(report([], { passed: 0 }))).toThrow(/no check ran/);
    expect(() => findingsOf([])).toThrow(/no kubernetes results/);
  });

  test('an exception excuses its check on the objects its globs name; the rest, and stale exceptions, are reported', () => {
    const findings = [
      finding('CKV_K8S_40', 'StatefulSet/selfplay-kernel-policy'),
      finding('CKV_K8S_40', 'Deployment/selfplay-worker-rollout'),
      finding('CKV_K8S_13', 'StatefulSet/selfplay-minio'),
    ];
    const reason = 'a reason long enough to be read';
    const kernels = { check: 'CKV_K8S_40', title: 't', resources: ['StatefulSet/*-kernel-*'], reason };
    const unused = { check: 'CKV_K8S_11', title: 't', resources: ['*/*'], reason };
    const verdict = judge(findings, [kernels, unused]);
    expect(verdict.excused).toBe(1);
    expect(verdict.unexcused.map((f) => `${f.check} ${f.resource}`)).toEqual([
      'CKV_K8S_40 Deployment/selfplay-worker-rollout',
      'CKV_K8S_13 StatefulSet/selfplay-minio',
    ]);
    expect(verdict.stale).toEqual([{ index: 1, exception: unused }]);
  });

  test("the chart's exceptions file is well formed, each exception with its reason", () => {
    const file = path.join(ROOT, 'infra/deploy/helm/selfplay/lint-exceptions.yaml');
    const exceptions = ExceptionsSchema.parse(parse(readFileSync(file, 'utf8')));
    expect(exceptions.length).toBeGreaterThan(0);
    expect(
      ExceptionsSchema.safeParse([{ check: 'CKV_K8S_40', title: 't', resources: ['*/*'], reason: 'ok' }])
        .success,
    ).toBe(false);
  });
});

describe('check-manifests: NetworkPolicies', () => {
  const labels = { 'app.kubernetes.io/component': 'kernel-policy' };
  const workload = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'kernel' },
    spec: {
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [
            {
              name: 'kernel',
              image: 'k',
              ports: [{ name: 'http', containerPort: 8000 }],
              livenessProbe: { tcpSocket: { port: 'http' } },
              readinessProbe: { tcpSocket: { port: 'http' } },
              resources: { requests: { cpu: '1' } },
            },
          ],
        },
      },
    },
  };
  const policy = (podSelector: object, from: object[], port: number) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'kernel' },
    spec: { podSelector, policyTypes: ['Ingress'], ingress: [{ from, ports: [{ port }] }] },
  });
  const byExpression = (values: string[]) => ({
    matchExpressions: [{ key: 'app.kubernetes.io/component', operator: 'In', values }],
  });

  test('a policy that selects pods, admits pods that exist, on a port they declare, passes', () => {
    expect(
      checkManifests([workload, policy(byExpression(['kernel-policy']), [{ podSelector: {} }], 8000)]),
    ).toEqual([]);
  });

  test("a secret given as a value is a problem; a secret file's path is not", () => {
    const withEnv = (env: object[]) => {
      const copy = structuredClone(workload);
      Object.assign(copy.spec.template.spec.containers[0] as object, { env });
      return copy;
    };
    expect(
      checkManifests([
        withEnv([
          { name: 'SELFPLAY_KERNEL_TOKEN', value: 'abc' },
          { name: 'SELFPLAY_KERNEL_TOKEN_FILE', value: '/etc/selfplay/kernel-token/tokens' },
        ]),
      ]),
    ).toEqual([
      'Deployment/kernel container kernel: SELFPLAY_KERNEL_TOKEN is given as a value; secrets come from a Secret (valueFrom.secretKeyRef)',
    ]);
  });

  test('a selector that selects nothing, a peer that matches no pod and an undeclared port are problems', () => {
    expect(
      checkManifests([
        workload,
        policy({ matchLabels: { 'app.kubernetes.io/component': 'kernel-polcy' } }, [], 8000),
        policy(byExpression(['kernel-policy']), [{ podSelector: byExpression(['worker-rollot']) }], 8001),
      ]),
    ).toEqual([
      'NetworkPolicy/kernel: podSelector selects no pods',
      'NetworkPolicy/kernel: an ingress peer selects no pods: {"matchExpressions":[{"key":"app.kubernetes.io/component","operator":"In","values":["worker-rollot"]}]}',
      'NetworkPolicy/kernel: admits port 8001, which no selected container declares',
    ]);
  });
});
