/* eslint-disable @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return --
   walks parsed YAML of any shape (`Obj`), checking each field it reads */
/**
 * Offline checks of rendered Kubernetes manifests (`helm template ... | tsx infra/deploy/check-manifests.ts`),
 * where no cluster and no downloaded schemas are at hand: each object's apiVersion for its kind, names a DNS
 * label allows, and the references between objects that a typo breaks silently until deploy time: selectors that
 * select their own pods, Services that select some pods and name ports they have, probes on declared ports,
 * mounts of declared volumes, secrets only through secretKeyRef, GPU requests equal to their limits, the
 * StatefulSets' governing Services, HPA targets, ServiceMonitor ports, and NetworkPolicies that select pods, admit
 * peers that exist and ports those pods declare (a policy that selects nothing protects nothing, silently).
 * Prints each problem; exits 1 if any.
 */
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const API_VERSIONS: Record<string, string> = {
  Deployment: 'apps/v1',
  StatefulSet: 'apps/v1',
  Service: 'v1',
  Secret: 'v1',
  ServiceAccount: 'v1',
  PersistentVolumeClaim: 'v1',
  ConfigMap: 'v1',
  Job: 'batch/v1',
  HorizontalPodAutoscaler: 'autoscaling/v2',
  PodDisruptionBudget: 'policy/v1',
  ServiceMonitor: 'monitoring.coreos.com/v1',
  NetworkPolicy: 'networking.k8s.io/v1',
};
const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const SECRET_LIKE = /(SECRET|PASSWORD|TOKEN|API_KEY|ACCESS_KEY)/;
/** A variable naming the file a secret is mounted at (SELFPLAY_KERNEL_TOKEN_FILE): its value is a path. */
const SECRET_FILE = /_FILE$/;

export function checkManifests(objects: readonly Obj[]): string[] {
  const problems: string[] = [];
  const where = (o: Obj): string => `${o.kind}/${o.metadata?.name}`;
  const workloads = objects.filter((o) => ['Deployment', 'StatefulSet', 'Job'].includes(o.kind));
  const services = objects.filter((o) => o.kind === 'Service');
  const podLabels = (w: Obj): Obj => w.spec?.template?.metadata?.labels ?? {};
  const containersOf = (w: Obj): Obj[] => [
    ...(w.spec?.template?.spec?.containers ?? []),
    ...(w.spec?.template?.spec?.initContainers ?? []),
  ];
  const selects = (selector: Obj, labels: Obj): boolean =>
    Object.entries(selector).every(([k, v]) => labels[k] === v || k === 'statefulset.kubernetes.io/pod-name');
  /** A LabelSelector (matchLabels and matchExpressions) against a pod's labels. */
  const labelSelectorMatches = (selector: Obj, labels: Obj): boolean =>
    selects(selector.matchLabels ?? {}, labels) &&
    (selector.matchExpressions ?? []).every((e: Obj) => {
      const has = Object.hasOwn(labels, e.key);
      if (e.operator === 'In') return has && e.values.includes(labels[e.key]);
      if (e.operator === 'NotIn') return !has || !e.values.includes(labels[e.key]);
      return e.operator === 'Exists' ? has : !has;
    });

  for (const o of objects) {
    const expected = API_VERSIONS[o.kind];
    if (!expected) problems.push(`${where(o)}: unexpected kind`);
    else if (o.apiVersion !== expected)
      problems.push(`${where(o)}: apiVersion ${o.apiVersion}, expected ${expected}`);
    const name = o.metadata?.name;
    if (typeof name !== 'string' || !DNS_LABEL.test(name))
      problems.push(`${where(o)}: name is not a DNS label`);
    for (const [k, v] of Object.entries(o.metadata?.labels ?? {})) {
      if (typeof v !== 'string' || v.length > 63)
        problems.push(`${where(o)}: label ${k} is not a string of ≤ 63`);
    }
  }

  for (const w of workloads) {
    const spec = w.spec?.template?.spec ?? {};
    if (w.kind !== 'Job' && !selects(w.spec?.selector?.matchLabels ?? { none: 'x' }, podLabels(w))) {
      problems.push(`${where(w)}: selector does not match its pod template labels`);
    }
    const volumes = new Set<string>([
      ...(spec.volumes ?? []).map((v: Obj) => v.name),
      ...(w.spec?.volumeClaimTemplates ?? []).map((v: Obj) => v.metadata?.name),
    ]);
    for (const c of containersOf(w)) {
      const at = `${where(w)} container ${c.name}`;
      if (!c.image) problems.push(`${at}: no image`);
      const ports = new Set<unknown>((c.ports ?? []).flatMap((p: Obj) => [p.name, p.containerPort]));
      if (w.kind !== 'Job') {
        for (const probe of ['livenessProbe', 'readinessProbe']) {
          if (!c[probe]) problems.push(`${at}: no ${probe}`);
        }
        if (!c.resources || Object.keys(c.resources).length === 0) problems.push(`${at}: no resources`);
      }
      for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
        const port = c[probe]?.httpGet?.port ?? c[probe]?.tcpSocket?.port;
        if (c[probe] && !ports.has(port))
          problems.push(`${at}: ${probe} port ${port} is not a container port`);
      }
      for (const m of c.volumeMounts ?? []) {
        if (!volumes.has(m.name)) problems.push(`${at}: mounts undeclared volume ${m.name}`);
      }
      for (const e of c.env ?? []) {
        if (SECRET_LIKE.test(e.name) && !SECRET_FILE.test(e.name) && e.value !== undefined) {
          problems.push(
            `${at}: ${e.name} is given as a value; secrets come from a Secret (valueFrom.secretKeyRef)`,
          );
        }
      }
      for (const kind of ['limits', 'requests'] as const) {
        for (const [resource, amount] of Object.entries(c.resources?.[kind] ?? {})) {
          const other = c.resources?.[kind === 'limits' ? 'requests' : 'limits']?.[resource];
          if (resource.endsWith('/gpu') && other !== amount) {
            problems.push(
              `${at}: ${resource} requests and limits differ (${String(amount)} vs ${String(other)})`,
            );
          }
        }
      }
    }
    if (w.kind === 'StatefulSet') {
      const governing = services.find((s) => s.metadata?.name === w.spec?.serviceName);
      if (!governing)
        problems.push(`${where(w)}: serviceName ${w.spec?.serviceName} is not a rendered Service`);
    }
  }

  for (const s of services) {
    const selector: Obj = s.spec?.selector ?? {};
    const targets = workloads.filter((w) => selects(selector, podLabels(w)));
    if (targets.length === 0) {
      problems.push(`${where(s)}: selects no pods`);
      continue;
    }
    for (const p of s.spec?.ports ?? []) {
      const target = p.targetPort ?? p.port;
      const has = targets.some((w) =>
        containersOf(w).some((c) =>
          (c.ports ?? []).some((cp: Obj) => cp.name === target || cp.containerPort === target),
        ),
      );
      if (!has)
        problems.push(`${where(s)}: port ${p.name} targets ${target}, which no selected container declares`);
    }
  }

  for (const h of objects.filter((o) => o.kind === 'HorizontalPodAutoscaler')) {
    const ref = h.spec?.scaleTargetRef ?? {};
    if (!objects.some((o) => o.kind === ref.kind && o.metadata?.name === ref.name)) {
      problems.push(`${where(h)}: scales ${ref.kind}/${ref.name}, which is not rendered`);
    }
    if (h.spec?.minReplicas > h.spec?.maxReplicas) problems.push(`${where(h)}: minReplicas > maxReplicas`);
  }

  for (const m of objects.filter((o) => o.kind === 'ServiceMonitor')) {
    const selected = services.filter((s) =>
      selects(m.spec?.selector?.matchLabels ?? {}, s.metadata?.labels ?? {}),
    );
    if (selected.length === 0) problems.push(`${where(m)}: selects no Service`);
    for (const e of m.spec?.endpoints ?? []) {
      const missing = selected.filter((s) => !(s.spec?.ports ?? []).some((p: Obj) => p.name === e.port));
      for (const s of missing)
        problems.push(`${where(m)}: endpoint port ${e.port} is not a port of ${where(s)}`);
    }
  }
  for (const np of objects.filter((o) => o.kind === 'NetworkPolicy')) {
    const podsOf = (selector: Obj): Obj[] =>
      workloads.filter((w) => labelSelectorMatches(selector, podLabels(w)));
    const targets = podsOf(np.spec?.podSelector ?? {});
    if (targets.length === 0) problems.push(`${where(np)}: podSelector selects no pods`);
    for (const rule of np.spec?.ingress ?? []) {
      for (const peer of rule.from ?? []) {
        if (peer.podSelector && !peer.namespaceSelector && podsOf(peer.podSelector).length === 0) {
          problems.push(`${where(np)}: an ingress peer selects no pods: ${JSON.stringify(peer.podSelector)}`);
        }
      }
      for (const p of rule.ports ?? []) {
        const declared = targets.some((w) =>
          containersOf(w).some((c) =>
            (c.ports ?? []).some((cp: Obj) => cp.name === p.port || cp.containerPort === p.port),
          ),
        );
        if (targets.length > 0 && !declared)
          problems.push(`${where(np)}: admits port ${p.port}, which no selected container declares`);
      }
    }
  }
  return problems;
}

function main(): void {
  const text = readFileSync(process.argv[2] ?? 0, 'utf8');
  const docs = parseAllDocuments(text);
  const errors = docs.flatMap((d) => d.errors.map((e) => `YAML: ${e.message}`));
  const objects = docs.map((d) => d.toJS() as Obj | null).filter((o): o is Obj => o !== null);
  const problems = [...errors, ...checkManifests(objects)];
  for (const p of problems) console.error(`check-manifests: ${p}`);
  console.log(`check-manifests: ${objects.length} objects, ${problems.length} problem(s)`);
  if (problems.length > 0) process.exit(1);
}

if (require.main === module) main();
