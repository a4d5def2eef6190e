import type http from 'node:http';
import { metrics, Registry } from '../../activities/lib/metrics';
import { recordFilterMetrics } from '../../activities/stages/stage-metrics';
import {
  bindAddress,
  metricsHost,
  serveProjectMetrics,
  serverAddress,
  startMetricsFromEnv,
  workersReadiness,
  type Readiness,
} from '../../workers/metrics';
import type { FilterResult } from '../../contracts/selfplay';

describe('metrics registry', () => {
  test('exposes counters, gauges and histograms in the Prometheus text format', () => {
    const r = new Registry();
    const c = r.counter('selfplay_things_total', 'Things\nseen');
    c.inc({ role: 'challenger' });
    c.inc({ role: 'challenger' }, 2);
    c.inc({ role: 'say "hi"\\\n' });
    c.inc({ role: 'challenger' }, -5); // ignored: counters never go down
    c.inc({ role: 'challenger' }, NaN);
    r.gauge('selfplay_rate', 'A rate').set({}, 0.25);
    r.gauge('selfplay_nan', 'Not a number').set({ a: 'x' }, NaN);
    const h = r.histogram('selfplay_seconds', 'Durations', [1, 5]);
    h.observe({ stage: 'gate' }, 0.5);
    h.observe({ stage: 'gate' }, 3);
    h.observe({ stage: 'gate' }, 10);
    expect(r.counter('selfplay_things_total', 'again')).toBe(c);
    expect(c.value({ role: 'challenger' })).toBe(3);
    expect(r.expose()).toBe(
      [
        '# HELP selfplay_nan Not a number',
        '# TYPE selfplay_nan gauge',
        'selfplay_nan{a="x"} NaN',
        '# HELP selfplay_rate A rate',
        '# TYPE selfplay_rate gauge',
        'selfplay_rate 0.25',
        '# HELP selfplay_seconds Durations',
        '# TYPE selfplay_seconds histogram',
        'selfplay_seconds_bucket{le="1",stage="gate"} 1',
        'selfplay_seconds_bucket{le="5",stage="gate"} 2',
        'selfplay_seconds_bucket{le="+Inf",stage="gate"} 3',
        'selfplay_seconds_sum{stage="gate"} 13.5',
        'selfplay_seconds_count{stage="gate"} 3',
        '# HELP selfplay_things_total Things\\nseen',
        '# TYPE selfplay_things_total counter',
        'selfplay_things_total{role="challenger"} 3',
        'selfplay_things_total{role="say \\"hi\\"\\\\\\n"} 1',
        '',
      ].join('\n'),
    );
  });

  test('rejects bad names, bad labels and a type clash', () => {
    const r = new Registry();
    expect(() => r.counter('bad-name', 'x')).toThrow(/invalid metric name/);
    r.counter('selfplay_x_total', 'x');
    expect(() => r.gauge('selfplay_x_total', 'x')).toThrow(/already registered as a counter/);
    expect(() => r.counter('selfplay_x_total', 'x').inc({ 'bad-label': 'v' })).toThrow(/invalid label/);
    expect(new Registry().expose()).toBe('');
  });

  test('the filter stage feeds rewards, valid-task rate and its duration', () => {
    metrics.reset();
    recordFilterMetrics('spice', {
      seconds: 2,
      rows: 3,
      metrics: {
        validTaskRate: 0.5,
        zeroAdvantageFraction: 0.1,
        meanRewardByRole: { challenger: 0.4, reasoner: 0.7 },
        rowsByRole: { challenger: 1, reasoner: 2 },
        passRateHistogram: [],
        invalidReasons: {},
        documents: 1,
        extra: {},
      },
    } as unknown as FilterResult);
    const text = metrics.expose();
    expect(text).toContain('selfplay_valid_task_rate{recipe="spice"} 0.5');
    expect(text).toContain('selfplay_mean_reward{recipe="spice",role="reasoner"} 0.7');
    expect(text).toContain('selfplay_training_rows_total{recipe="spice",role="reasoner"} 2');
    expect(text).toContain('selfplay_stage_seconds_count{recipe="spice",stage="filter"} 1');
  });
});

describe('worker metrics endpoint', () => {
  test('parses the port variables', () => {
    expect(bindAddress('P', undefined)).toBeUndefined();
    expect(bindAddress('P', ' ')).toBeUndefined();
    expect(bindAddress('P', '9464')).toBe('127.0.0.1:9464');
    expect(bindAddress('P', '9464', '0.0.0.0')).toBe('0.0.0.0:9464');
    expect(bindAddress('P', '10.0.0.5:9464', '0.0.0.0')).toBe('10.0.0.5:9464');
    expect(() => bindAddress('P', 'abc')).toThrow(/P="abc": expected a port/);
    expect(() => bindAddress('P', '70000')).toThrow(/expected a port/);
  });

  test('SELFPLAY_METRICS_HOST: loopback unless set; an address with a port or spaces is refused', () => {
    expect(metricsHost(undefined)).toBe('127.0.0.1');
    expect(metricsHost(' ')).toBe('127.0.0.1');
    expect(metricsHost('0.0.0.0')).toBe('0.0.0.0');
    expect(() => metricsHost('0.0.0.0:9464')).toThrow(
      /SELFPLAY_METRICS_HOST="0.0.0.0:9464": expected an IPv4/,
    );
    expect(() => metricsHost('a b')).toThrow(/SELFPLAY_METRICS_HOST/);
  });

  test('a bare port binds on loopback by default, on SELFPLAY_METRICS_HOST when set', async () => {
    for (const [env, host] of [
      [{ SELFPLAY_PROJECT_METRICS_PORT: '0' }, '127.0.0.1'],
      [{ SELFPLAY_PROJECT_METRICS_PORT: '0', SELFPLAY_METRICS_HOST: '0.0.0.0' }, '0.0.0.0'],
    ] as const) {
      const endpoints = await startMetricsFromEnv(env);
      try {
        expect(endpoints.project?.replace(/:\d+$/, '')).toBe(host);
        expect(endpoints.temporal).toBeUndefined();
      } finally {
        await endpoints.close();
      }
    }
  });

  test('serves the registry over HTTP at /metrics', async () => {
    const r = new Registry();
    r.counter('selfplay_inference_completions_total', 'Completions').inc({ role: 'reasoner' }, 8);
    const server: http.Server = await serveProjectMetrics('127.0.0.1:0', r);
    try {
      const base = `http://${serverAddress(server)}`;
      const res = await fetch(`${base}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(await res.text()).toContain('selfplay_inference_completions_total{role="reasoner"} 8');
      r.counter('selfplay_inference_completions_total', 'Completions').inc({ role: 'reasoner' });
      expect(await (await fetch(`${base}/metrics`)).text()).toContain('{role="reasoner"} 9');
      expect((await fetch(`${base}/nope`)).status).toBe(404);
      expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('answers the probes: /healthz while the process runs, /readyz by the workers readiness', async () => {
    let verdict: Readiness = { ready: false, detail: 'starting' };
    const server = await serveProjectMetrics('127.0.0.1:0', new Registry(), () => verdict);
    try {
      const base = `http://${serverAddress(server)}`;
      const health = await fetch(`${base}/healthz`);
      expect([health.status, await health.text()]).toEqual([200, 'ok\n']);
      const starting = await fetch(`${base}/readyz`);
      expect([starting.status, await starting.text()]).toEqual([503, 'starting\n']);
      verdict = { ready: true, detail: 'rollout RUNNING' };
      const ready = await fetch(`${base}/readyz`);
      expect([ready.status, await ready.text()]).toEqual([200, 'rollout RUNNING\n']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test('a worker process is ready only while every pool polls', () => {
    const pool = (name: string, state: string) => ({ pool: name, getState: () => state });
    expect(workersReadiness([])).toEqual({ ready: false, detail: 'starting: no worker created yet' });
    expect(workersReadiness([pool('orchestrator', 'RUNNING'), pool('rollout', 'RUNNING')])).toEqual({
      ready: true,
      detail: 'orchestrator RUNNING, rollout RUNNING',
    });
    expect(workersReadiness([pool('orchestrator', 'RUNNING'), pool('rollout', 'INITIALIZED')]).ready).toBe(
      false,
    );
    expect(workersReadiness([pool('trainer', 'DRAINING')])).toEqual({
      ready: false,
      detail: 'trainer DRAINING',
    });
  });
});
