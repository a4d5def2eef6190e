/**
 * A tiny in-process metrics registry in the Prometheus text format (version 0.0.4). Activities feed it
 * (`metrics.counter(...).inc()`); a worker that sets SELFPLAY_PROJECT_METRICS_PORT serves `expose()` over
 * HTTP (workers/metrics.ts). Nothing here does I/O, so feeding it costs a map lookup and never fails a stage.
 */

export type Labels = Readonly<Record<string, string | number>>;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Default histogram buckets, in seconds: from a fast gate to a slow training step. */
export const SECONDS_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

abstract class Metric {
  protected readonly series = new Map<string, { labels: Labels; value: number }>();
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
  ) {}

  protected slot(labels: Labels): { labels: Labels; value: number } {
    for (const label of Object.keys(labels)) {
      if (!LABEL.test(label) || label === 'le')
        throw new Error(`metric ${this.name}: invalid label name ${JSON.stringify(label)}`);
    }
    const key = labelText(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels: { ...labels }, value: 0 };
      this.series.set(key, s);
    }
    return s;
  }

  /** The `# HELP`/`# TYPE` header and one line per series. */
  expose(): string {
    const lines = [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`];
    lines.push(...this.samples());
    return lines.join('\n');
  }

  protected samples(): string[] {
    return [...this.series.values()].map((s) => `${this.name}${labelText(s.labels)} ${formatValue(s.value)}`);
  }

  reset(): void {
    this.series.clear();
  }
}

export class Counter extends Metric {
  constructor(name: string, help: string) {
    super(name, help, 'counter');
  }

  /** Adds `by` (≥ 0; NaN and negative amounts are ignored, a counter never goes down). */
  inc(labels: Labels = {}, by = 1): void {
    if (!(by >= 0) || !Number.isFinite(by)) return;
    this.slot(labels).value += by;
  }

  value(labels: Labels = {}): number {
    return this.series.get(labelText(labels))?.value ?? 0;
  }
}

export class Gauge extends Metric {
  constructor(name: string, help: string) {
    super(name, help, 'gauge');
  }

  set(labels: Labels, value: number): void {
    this.slot(labels).value = value;
  }

  value(labels: Labels = {}): number | undefined {
    return this.series.get(labelText(labels))?.value;
  }
}

export class Histogram extends Metric {
  private readonly buckets: number[];
  private readonly counts = new Map<string, number[]>();
  private readonly sums = new Map<string, number>();

  constructor(name: string, help: string, buckets: readonly number[] = SECONDS_BUCKETS) {
    super(name, help, 'histogram');
    this.buckets = [...buckets].filter(Number.isFinite).sort((a, b) => a - b);
  }

  /** Records one observation (NaN is ignored). */
  observe(labels: Labels, value: number): void {
    if (Number.isNaN(value)) return;
    const s = this.slot(labels);
    const key = labelText(labels);
    const counts = this.counts.get(key) ?? this.buckets.map(() => 0);
    this.buckets.forEach((le, i) => {
      if (value <= le) counts[i] = (counts[i] ?? 0) + 1;
    });
    this.counts.set(key, counts);
    this.sums.set(key, (this.sums.get(key) ?? 0) + value);
    s.value += 1; // the count
  }

  protected override samples(): string[] {
    const lines: string[] = [];
    for (const [key, s] of this.series) {
      const counts = this.counts.get(key) ?? [];
      this.buckets.forEach((le, i) => {
        lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: formatValue(le) })} ${counts[i] ?? 0}`);
      });
      lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: '+Inf' })} ${s.value}`);
      lines.push(`${this.name}_sum${labelText(s.labels)} ${formatValue(this.sums.get(key) ?? 0)}`);
      lines.push(`${this.name}_count${labelText(s.labels)} ${s.value}`);
    }
    return lines;
  }

  override reset(): void {
    super.reset();
    this.counts.clear();
    this.sums.clear();
  }
}

export class Registry {
  private readonly metrics = new Map<string, Metric>();

  /** The counter of that name, created on first use; asking again returns the same one. */
  counter(name: string, help: string): Counter {
    return this.get(name, 'counter', () => new Counter(name, help)) as Counter;
  }

  gauge(name: string, help: string): Gauge {
    return this.get(name, 'gauge', () => new Gauge(name, help)) as Gauge;
  }

  histogram(name: string, help: string, buckets?: readonly number[]): Histogram {
    return this.get(name, 'histogram', () => new Histogram(name, help, buckets)) as Histogram;
  }

  /** Every metric in the Prometheus text exposition format, sorted by name, newline-terminated. */
  expose(): string {
    const blocks = [...this.metrics.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((m) => m.expose());
    return blocks.length ? `${blocks.join('\n')}\n` : '';
  }

  /** Clears every series (the metrics stay registered). For tests. */
  reset(): void {
    for (const m of this.metrics.values()) m.reset();
  }

  private get(name: string, type: Metric['type'], make: () => Metric): Metric {
    if (!NAME.test(name)) throw new Error(`invalid metric name ${JSON.stringify(name)}`);
    const existing = this.metrics.get(name);
    if (existing) {
      if (existing.type !== type)
        throw new Error(`metric ${name} is already registered as a ${existing.type}, not a ${type}`);
      return existing;
    }
    const m = make();
    this.metrics.set(name, m);
    return m;
  }
}

/** The process-wide registry the activities feed and the worker serves. */
export const metrics = new Registry();

/** Shorthand for the activities: one observation of a histogram in the process-wide registry. */
export function observe(name: string, help: string, labels: Labels, value: number): void {
  metrics.histogram(name, help).observe(labels, value);
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function labelText(labels: Labels): string {
  const entries = Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.length === 0) return '';
  return `{${entries.map(([k, v]) => `${k}="${escapeLabel(String(v))}"`).join(',')}}`;
}

const escapeLabel = (s: string): string =>
  s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const escapeHelp = (s: string): string => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
