/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument --
   reads rendered Kubernetes objects (`Obj`) */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { parseBindings } from '../../../config/endpoint-bindings';
import { startRefusal } from '../../../config/run-access';
import { resolveRunConfig } from '../../../config/schema';

/**
 * The chart's hardening, on its renderings (helm from infra/local/tools.sh): restricted securityContexts for
 * every pod and container, NetworkPolicies that admit only the pods each component serves, the inference
 * servers' API key from the Secret, the workers' metrics on an address a probe can reach, the workers'
 * credential bindings and input roots, and the kernels' token as a file.
 */

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ROOT = path.resolve(__dirname, '../../..');
const CHART = path.join(ROOT, 'infra/deploy/helm/selfplay');
const HELM = path.join(process.env.SELFPLAY_TOOLS_DIR ?? path.join(ROOT, '.tools'), 'bin/helm');

/** `helm template` of the CI values file, with more flags (`--set`, `--set-json`) after it. */
function render(values: string, ...flags: string[]): Obj[] {
  if (!existsSync(HELM)) throw new Error(`${HELM} is missing: run 'bash infra/local/tools.sh helm' first`);
  const args = ['template', 'selfplay', CHART, '-f', path.join(CHART, 'ci', `${values}-values.yaml`)];
  // stderr piped: a refusal's message is the error's.
  const text = execFileSync(HELM, [...args, '--kube-version', '1.31.0', ...flags], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

const podSpecs = (objects: Obj[]): [string, Obj][] =>
  objects
    .filter((o) => ['Deployment', 'StatefulSet', 'Job'].includes(o.kind))
    .map((o) => [`${o.kind}/${o.metadata.name}`, o.spec.template.spec]);
const named = (objects: Obj[], kind: string, name: string): Obj => {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`${kind}/${name} is not rendered`);
  return found;
};
const container = (objects: Obj[], name: string): Obj =>
  named(objects, 'StatefulSet', name).spec.template.spec.containers[0];
const envOf = (c: Obj, name: string): Obj | undefined => c.env.find((e: Obj) => e.name === name);
/** The components a NetworkPolicy rule's peers admit (`*` for a peer that is not a pod selector of the release). */
const admitted = (rule: Obj): string[] =>
  rule.from.flatMap((peer: Obj) =>
    peer.podSelector
      ? (peer.podSelector.matchExpressions?.[0]?.values ?? [
          peer.podSelector.matchLabels['app.kubernetes.io/component'],
        ])
      : ['*'],
  );

describe.each(['external', 'sglang', 'vllm'])('the chart rendered with ci/%s-values.yaml', (values) => {
  const objects = render(values);

  test('every pod runs as a fixed non-root user under the RuntimeDefault seccomp profile, without an API token', () => {
    for (const [where, spec] of podSpecs(objects)) {
      expect([where, spec.automountServiceAccountToken]).toEqual([where, false]);
      expect([where, spec.securityContext]).toMatchObject([
        where,
        { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, seccompProfile: { type: 'RuntimeDefault' } },
      ]);
    }
  });

  test('every container: no privilege escalation, no capabilities, a read-only root with writable emptyDirs', () => {
    for (const [where, spec] of podSpecs(objects)) {
      for (const c of spec.containers) {
        expect([where, c.securityContext]).toEqual([
          where,
          { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
        ]);
        const tmp = c.volumeMounts?.find((m: Obj) => m.mountPath === '/tmp');
        expect([where, spec.volumes.find((v: Obj) => v.name === tmp?.name)?.emptyDir]).toEqual([where, {}]);
      }
    }
  });

  test('a default deny for every pod of the release, and a policy admitting traffic to each component', () => {
    const policies = objects.filter((o) => o.kind === 'NetworkPolicy');
    const deny = named(objects, 'NetworkPolicy', 'selfplay-default-deny');
    expect(deny.spec).toEqual({
      podSelector: {
        matchLabels: { 'app.kubernetes.io/name': 'selfplay', 'app.kubernetes.io/instance': 'selfplay' },
      },
      policyTypes: ['Ingress'],
    });
    const kernels = policies.filter((p) => p.metadata.name.startsWith('selfplay-kernel-'));
    expect(kernels.length).toBe(values === 'vllm' ? 2 : 1);
    for (const kernel of kernels) {
      // The HTTP API from the three pools, on its port only; every port (rendezvous, NCCL) from its ranks alone.
      expect(kernel.spec.ingress.map((r: Obj) => [admitted(r), r.ports ?? 'all'])).toEqual([
        [['worker-orchestrator', 'worker-rollout', 'worker-trainer'], [{ port: 8000, protocol: 'TCP' }]],
        [[kernel.metadata.name.replace('selfplay-', '')], 'all'],
      ]);
    }
    const workers = named(objects, 'NetworkPolicy', 'selfplay-workers');
    expect(workers.spec.ingress).toEqual([
      {
        from: [{ namespaceSelector: {} }],
        ports: [
          { port: 9464, protocol: 'TCP' },
          { port: 9465, protocol: 'TCP' },
        ],
      },
    ]);
    expect(policies.every((p) => p.spec.policyTypes.join() === 'Ingress')).toBe(true);
  });

  test('workers bind their metrics on 0.0.0.0 (the probes come from outside the pod)', () => {
    const worker = named(objects, 'Deployment', 'selfplay-worker-orchestrator').spec.template.spec
      .containers[0];
    expect(envOf(worker, 'SELFPLAY_METRICS_HOST')).toEqual({
      name: 'SELFPLAY_METRICS_HOST',
      value: '0.0.0.0',
    });
  });
});

describe('inference servers', () => {
  test('vLLM: its API key from the Secret, runtime LoRA loading reachable from the rollout pool only', () => {
    const objects = render('vllm');
    const server = container(objects, 'selfplay-inference');
    expect(envOf(server, 'VLLM_API_KEY')).toEqual({
      name: 'VLLM_API_KEY',
      valueFrom: { secretKeyRef: { name: 'inference-key', key: 'SELFPLAY_INFERENCE_API_KEY' } },
    });
    expect(envOf(server, 'VLLM_ALLOW_RUNTIME_LORA_UPDATING')?.value).toBe('True');
    const policy = named(objects, 'NetworkPolicy', 'selfplay-inference');
    expect(policy.spec.ingress.map((r: Obj) => [admitted(r), r.ports])).toEqual([
      [['worker-rollout'], [{ port: 8000, protocol: 'TCP' }]],
    ]);
    const wider = named(
      render('vllm', '--set', 'networkPolicy.inferenceFromPools={rollout,orchestrator}'),
      'NetworkPolicy',
      'selfplay-inference',
    );
    expect(admitted(wider.spec.ingress[0])).toEqual(['worker-rollout', 'worker-orchestrator']);
  });

  test('SGLang: --api-key filled from the Secret through the environment when a key is configured, none otherwise', () => {
    const keyed = container(
      render('sglang', '--set', 'inference.apiKey.existingSecret=sglang-key'),
      'selfplay-inference',
    );
    expect(keyed.args.slice(keyed.args.indexOf('--api-key'), keyed.args.indexOf('--api-key') + 2)).toEqual([
      '--api-key',
      '$(SELFPLAY_INFERENCE_API_KEY)',
    ]);
    expect(envOf(keyed, 'SELFPLAY_INFERENCE_API_KEY')?.valueFrom).toEqual({
      secretKeyRef: { name: 'sglang-key', key: 'SELFPLAY_INFERENCE_API_KEY' },
    });
    expect(container(render('sglang'), 'selfplay-inference').args).not.toContain('--api-key');
  });

  test('both run as the non-root user with HOME on the /tmp emptyDir; a component override replaces one key', () => {
    const objects = render('sglang', '--set', 'inference.securityContext.readOnlyRootFilesystem=false');
    const server = container(objects, 'selfplay-inference');
    expect(envOf(server, 'HOME')?.value).toBe('/tmp');
    expect(server.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(
      named(objects, 'StatefulSet', 'selfplay-inference').spec.template.spec.securityContext.runAsUser,
    ).toBe(1000);
  });
});

describe('networkPolicy', () => {
  test('MinIO admits the workers, the kernels and its bucket Job on 9000', () => {
    const minio = named(render('vllm'), 'NetworkPolicy', 'selfplay-minio');
    expect(minio.spec.ingress.map((r: Obj) => [admitted(r), r.ports])).toEqual([
      [
        [
          'worker-orchestrator',
          'worker-rollout',
          'worker-trainer',
          'kernel-challenger',
          'kernel-solver',
          'minio-bucket',
        ],
        [{ port: 9000, protocol: 'TCP' }],
      ],
    ]);
  });

  test('networkPolicy.enabled=false renders none; metricsFrom=[] admits nobody to the workers', () => {
    expect(
      render('vllm', '--set', 'networkPolicy.enabled=false').filter((o) => o.kind === 'NetworkPolicy'),
    ).toEqual([]);
    const closed = named(
      render('external', '--set-json', 'networkPolicy.metricsFrom=[]'),
      'NetworkPolicy',
      'selfplay-workers',
    );
    expect(closed.spec.ingress).toBeUndefined();
  });
});

const POOLS = ['orchestrator', 'rollout', 'trainer'];
const worker = (objects: Obj[], pool: string): Obj =>
  named(objects, 'Deployment', `selfplay-worker-${pool}`).spec.template.spec.containers[0];
/** A worker's environment as its process sees it: the plain values, and a stand-in for each secret. */
const processEnv = (c: Obj): Record<string, string> =>
  Object.fromEntries(c.env.map((e: Obj) => [e.name, e.value ?? 'secret-from-a-secret-0123456789']));
/** The credential bindings a worker's environment declares, as `credential -> prefixes`. */
const bindingsOf = (c: Obj): Record<string, string[]> => {
  const bound: Record<string, string[]> = {};
  for (const b of parseBindings(envOf(c, 'SELFPLAY_CREDENTIAL_BINDINGS')?.value ?? '')) {
    (bound[b.credential] ??= []).push(b.prefix);
  }
  return bound;
};
/** The URL of every kernel's HTTP Service, as the objects define it. */
const kernelServices = (objects: Obj[]): string[] =>
  objects
    .filter((o) => o.kind === 'Service' && /^selfplay-kernel-.*(?<!-ranks)$/.test(o.metadata.name))
    .map((o) => `http://${o.metadata.name}:${o.spec.ports[0].port}`);
/** Each inference replica's own address (pod N of the StatefulSet under its headless Service) and the Service. */
const inferenceServers = (objects: Obj[]): string[] => {
  const sts = named(objects, 'StatefulSet', 'selfplay-inference');
  const port = sts.spec.template.spec.containers[0].ports[0].containerPort;
  const replicas = Array.from(
    { length: sts.spec.replicas },
    (_, i) => `http://${sts.metadata.name}-${i}.${sts.spec.serviceName}:${port}`,
  );
  return [`http://${named(objects, 'Service', 'selfplay-inference').metadata.name}:${port}`, ...replicas];
};

describe.each([
  ['external', 's3://rl-artifacts'],
  ['sglang', 's3://selfplay'],
  ['vllm', 's3://selfplay'],
])('the workers of ci/%s-values.yaml', (values, bucket) => {
  const objects = render(values);

  test('every pool binds the kernel token to every kernel and the inference key to every server it syncs', () => {
    const kernels = kernelServices(objects);
    expect(kernels.length).toBe(values === 'vllm' ? 2 : 1);
    for (const pool of POOLS) {
      const bound = bindingsOf(worker(objects, pool));
      expect([pool, bound]).toEqual([
        pool,
        {
          SELFPLAY_KERNEL_TOKEN: kernels,
          ...(values === 'external' ? {} : { SELFPLAY_INFERENCE_API_KEY: inferenceServers(objects) }),
        },
      ]);
    }
  });

  test("every pool may read inputs from the release's bucket", () => {
    for (const pool of POOLS) {
      expect([pool, envOf(worker(objects, pool), 'SELFPLAY_INPUT_ROOTS')?.value]).toEqual([pool, bucket]);
    }
  });

  test('kernels read their accepted tokens from the Secret mounted as a file, and get no token variable', () => {
    for (const sts of objects.filter((o) => o.kind === 'StatefulSet' && /-kernel-/.test(o.metadata.name))) {
      const spec = sts.spec.template.spec;
      const kernel = spec.containers[0];
      const file = envOf(kernel, 'SELFPLAY_KERNEL_TOKEN_FILE')?.value as string;
      expect(envOf(kernel, 'SELFPLAY_KERNEL_TOKEN')).toBeUndefined();
      const mount = kernel.volumeMounts.find((m: Obj) => file.startsWith(`${m.mountPath}/`));
      // A whole volume, never a subPath: the kubelet updates only those in place when the Secret changes.
      expect(mount).toMatchObject({ name: 'kernel-token', readOnly: true });
      expect(mount.subPath).toBeUndefined();
      expect(spec.volumes.find((v: Obj) => v.name === 'kernel-token').secret).toEqual({
        secretName: 'selfplay-kernel-token',
        items: [{ key: 'SELFPLAY_KERNEL_TOKEN', path: file.slice(mount.mountPath.length + 1) }],
      });
    }
  });
});

describe('worker environment values', () => {
  test('extraCredentialBindings and inputRoots add to and replace the defaults', () => {
    const objects = render(
      'external',
      '--set-json',
      'workers.extraCredentialBindings={"SELFPLAY_VLLM_API_KEY":["http://vllm.other:8000","http://vllm2.other:8000"]}',
      '--set-json',
      'workers.inputRoots=["s3://corpora/shared","/data/benchmarks"]',
    );
    const c = worker(objects, 'orchestrator');
    expect(bindingsOf(c)).toEqual({
      SELFPLAY_KERNEL_TOKEN: ['http://selfplay-kernel-policy:8000'],
      SELFPLAY_VLLM_API_KEY: ['http://vllm.other:8000', 'http://vllm2.other:8000'],
    });
    expect(envOf(c, 'SELFPLAY_INPUT_ROOTS')?.value).toBe('s3://corpora/shared,/data/benchmarks');
  });

  test('security.kernelToken.acceptedKey names the key the kernels mount; the workers keep sending `key`', () => {
    const objects = render('external', '--set', 'security.kernelToken.acceptedKey=SELFPLAY_KERNEL_TOKENS');
    const spec = named(objects, 'StatefulSet', 'selfplay-kernel-policy').spec.template.spec;
    expect(spec.volumes.find((v: Obj) => v.name === 'kernel-token').secret.items).toEqual([
      { key: 'SELFPLAY_KERNEL_TOKENS', path: 'tokens' },
    ]);
    expect(envOf(worker(objects, 'trainer'), 'SELFPLAY_KERNEL_TOKEN')?.valueFrom).toEqual({
      secretKeyRef: { name: 'selfplay-kernel-token', key: 'SELFPLAY_KERNEL_TOKEN' },
    });
  });

  test("a SCOPE release (a kernel per policy): the orchestrator's start check admits both kernels, refuses others", () => {
    const objects = render(
      'external',
      '--set-json',
      'kernels=[{"policy":"challenger","model":"Qwen/Qwen3-4B"},{"policy":"solver","model":"Qwen/Qwen3-4B"}]',
    );
    const env = processEnv(worker(objects, 'orchestrator'));
    const kernel = (policy: string) => `http://selfplay-kernel-${policy}:8000`;
    const scope = (corpus: string, solverUrl = kernel('solver')) => {
      const r = resolveRunConfig({
        recipe: 'scope',
        corpus: { uri: corpus },
        training: {
          policies: {
            challenger: { roles: ['challenger'], trainerUrl: kernel('challenger') },
            solver: { roles: ['solver'], trainerUrl: solverUrl },
          },
        },
      });
      if (!r.ok) throw new Error(r.problems.join('; '));
      return r.config;
    };
    expect(startRefusal(scope('s3://rl-artifacts/corpus.jsonl.gz'), env)).toBeUndefined();
    const refused = startRefusal(scope('test/fixtures/corpus.jsonl', 'http://elsewhere:8000'), env);
    expect(refused).toContain(
      "training.policies.solver.trainerUrl http://elsewhere:8000 is not among this worker's",
    );
    expect(refused).toContain(
      'corpus.uri: test/fixtures/corpus.jsonl is outside the input roots of this worker',
    );
  });

  test('inference.apiKey with the kernel sampling is refused: the kernel takes the kernel token', () => {
    expect(() => render('external', '--set', 'inference.apiKey.existingSecret=key')).toThrow(
      /inference.apiKey.existingSecret is the vLLM\/SGLang servers' key/,
    );
  });
});
