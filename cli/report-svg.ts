/**
 * Inline SVG charts for `selfplay report`: pure functions from numbers to markup, no scripts, no external
 * resources. Every text that reaches the markup goes through `escapeXml`; non-finite values are skipped (a
 * line breaks at the gap, a bar segment is left out) instead of producing `NaN` coordinates.
 */

export const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
];

export const colorAt = (i: number): string =>
  PALETTE[((i % PALETTE.length) + PALETTE.length) % PALETTE.length]!;

export function escapeXml(text: unknown): string {
  return String(text)
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

/** A linear map from [d0, d1] to [r0, r1]; a zero-width domain maps to the middle of the range. */
export function scaleLinear(domain: [number, number], range: [number, number]): (v: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  if (d1 === d0) return () => (r0 + r1) / 2;
  return (v) => r0 + ((v - d0) / (d1 - d0)) * (r1 - r0);
}

/**
 * Round tick values covering [min, max] (about `count` of them: steps of 1, 2 or 5 × 10^k). The first tick
 * is ≤ min and the last ≥ max, so they double as the axis domain. Degenerate input gives a usable domain.
 */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
  if (min > max) [min, max] = [max, min];
  if (min === max) {
    const pad = min === 0 ? 1 : Math.abs(min) * 0.1;
    min -= pad;
    max += pad;
  }
  const raw = (max - min) / Math.max(1, count);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const start = Math.floor(min / step + 1e-9) * step;
  const ticks: number[] = [];
  for (let v = start; v <= max + step * 1e-9 || ticks.length < 2; v += step) {
    ticks.push(Number(v.toPrecision(12)));
    if (ticks.length > 100) break;
  }
  if (ticks[ticks.length - 1]! < max) ticks.push(Number((ticks[ticks.length - 1]! + step).toPrecision(12)));
  return ticks;
}

/** Short tick labels: 0.25, 12, 1.5k, 2M. */
export function formatTick(v: number): string {
  if (!Number.isFinite(v)) return '';
  const a = Math.abs(v);
  if (a >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (a >= 1e4) return `${Number((v / 1e3).toPrecision(3))}k`;
  return String(Number(v.toPrecision(3)));
}

export interface ChartFrame {
  id: string;
  title: string;
  xLabel?: string;
  yLabel?: string;
  width?: number;
  height?: number;
}

export interface LineSeries {
  name: string;
  points: Array<[x: number, y: number]>;
}

export interface LineChartOptions extends ChartFrame {
  series: LineSeries[];
  /** Fixed y domain (e.g. [0, 1] for rates); otherwise fitted to the data. */
  yDomain?: [number, number];
}

export interface StackedBarOptions extends ChartFrame {
  /** One bar per category (an iteration). */
  categories: Array<string | number>;
  /** One segment per stack; values[i] belongs to categories[i]. */
  stacks: Array<{ name: string; values: number[] }>;
  yDomain?: [number, number];
}

const MARGIN = { top: 36, right: 150, bottom: 44, left: 56 };

interface Layout {
  width: number;
  height: number;
  x0: number;
  x1: number;
  y0: number;
  y1: number;
}

function layout(frame: ChartFrame): Layout {
  const width = frame.width ?? 560;
  const height = frame.height ?? 280;
  return {
    width,
    height,
    x0: MARGIN.left,
    x1: width - MARGIN.right,
    y0: height - MARGIN.bottom,
    y1: MARGIN.top,
  };
}

const fmt = (v: number): string => (Number.isFinite(v) ? String(Math.round(v * 10) / 10) : '0');

function open(frame: ChartFrame, l: Layout): string {
  return (
    `<svg id="${escapeXml(frame.id)}" class="chart" xmlns="http://www.w3.org/2000/svg" width="${l.width}" height="${l.height}" ` +
    `viewBox="0 0 ${l.width} ${l.height}" role="img" aria-label="${escapeXml(frame.title)}">` +
    `<title>${escapeXml(frame.title)}</title>` +
    `<rect x="0" y="0" width="${l.width}" height="${l.height}" fill="#fff"/>` +
    `<text x="${l.x0}" y="20" font-size="14" font-weight="bold">${escapeXml(frame.title)}</text>`
  );
}

function empty(frame: ChartFrame): string {
  const l = layout(frame);
  return (
    open(frame, l) +
    `<text class="empty" x="${fmt((l.x0 + l.x1) / 2)}" y="${fmt((l.y0 + l.y1) / 2)}" text-anchor="middle" fill="#888">no data</text></svg>`
  );
}

function yAxis(l: Layout, ticks: number[], y: (v: number) => number, label?: string): string {
  const parts = ticks.map(
    (t) =>
      `<line x1="${l.x0}" x2="${l.x1}" y1="${fmt(y(t))}" y2="${fmt(y(t))}" stroke="#e5e5e5"/>` +
      `<text x="${l.x0 - 6}" y="${fmt(y(t) + 4)}" text-anchor="end" font-size="11">${escapeXml(formatTick(t))}</text>`,
  );
  parts.push(`<line class="axis" x1="${l.x0}" x2="${l.x0}" y1="${l.y0}" y2="${l.y1}" stroke="#333"/>`);
  if (label) {
    const cy = fmt((l.y0 + l.y1) / 2);
    parts.push(
      `<text x="14" y="${cy}" transform="rotate(-90 14 ${cy})" text-anchor="middle" font-size="11">${escapeXml(label)}</text>`,
    );
  }
  return `<g class="y-axis">${parts.join('')}</g>`;
}

function xAxis(l: Layout, ticks: Array<{ at: number; label: string }>, label?: string): string {
  const parts = ticks.map(
    (t) =>
      `<line x1="${fmt(t.at)}" x2="${fmt(t.at)}" y1="${l.y0}" y2="${l.y0 + 4}" stroke="#333"/>` +
      `<text x="${fmt(t.at)}" y="${l.y0 + 16}" text-anchor="middle" font-size="11">${escapeXml(t.label)}</text>`,
  );
  parts.push(`<line class="axis" x1="${l.x0}" x2="${l.x1}" y1="${l.y0}" y2="${l.y0}" stroke="#333"/>`);
  if (label) {
    parts.push(
      `<text x="${fmt((l.x0 + l.x1) / 2)}" y="${l.height - 8}" text-anchor="middle" font-size="11">${escapeXml(label)}</text>`,
    );
  }
  return `<g class="x-axis">${parts.join('')}</g>`;
}

function legend(l: Layout, names: string[]): string {
  const items = names.map((name, i) => {
    const y = l.y1 + i * 18;
    return (
      `<rect x="${l.x1 + 12}" y="${y}" width="12" height="12" fill="${colorAt(i)}"/>` +
      `<text x="${l.x1 + 30}" y="${y + 10}" font-size="11">${escapeXml(truncate(name, 20))}</text>`
    );
  });
  return `<g class="legend">${items.join('')}</g>`;
}

const truncate = (s: string, n: number): string => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

/** At most ~12 x-axis labels: every k-th of the given positions. */
function thin<T>(items: T[], max = 12): T[] {
  const k = Math.max(1, Math.ceil(items.length / max));
  return items.filter((_, i) => i % k === 0);
}

/** Lines over a numeric x (iterations), one per series, with dots at the points. */
export function lineChart(o: LineChartOptions): string {
  const series = o.series.map((s) => ({
    name: s.name,
    points: s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y)),
  }));
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return empty(o);
  const l = layout(o);
  const xs = [...new Set(all.map(([x]) => x))].sort((a, b) => a - b);
  const ys = all.map(([, y]) => y);
  const yTicks = o.yDomain
    ? niceTicks(o.yDomain[0], o.yDomain[1])
    : niceTicks(Math.min(...ys), Math.max(...ys));
  const y = scaleLinear([yTicks[0]!, yTicks[yTicks.length - 1]!], [l.y0, l.y1]);
  const pad = xs.length === 1 ? 0 : 10;
  const x = scaleLinear([xs[0]!, xs[xs.length - 1]!], [l.x0 + pad, l.x1 - pad]);
  const paths = o.series.map((raw, i) => {
    // Break the line where a point is missing or not finite.
    const segments: string[] = [];
    let current: string[] = [];
    for (const [px, py] of [...raw.points].sort((a, b) => a[0] - b[0])) {
      if (!Number.isFinite(px) || !Number.isFinite(py)) {
        if (current.length) segments.push(current.join(' '));
        current = [];
        continue;
      }
      current.push(`${current.length ? 'L' : 'M'}${fmt(x(px))},${fmt(y(py))}`);
    }
    if (current.length) segments.push(current.join(' '));
    const dots = series[i]!.points.map(
      ([px, py]) =>
        `<circle cx="${fmt(x(px))}" cy="${fmt(y(py))}" r="3" fill="${colorAt(i)}"><title>${escapeXml(
          `${raw.name} @ ${px}: ${formatTick(py)}`,
        )}</title></circle>`,
    );
    return (
      `<g class="series" data-name="${escapeXml(raw.name)}">` +
      segments.map((d) => `<path d="${d}" fill="none" stroke="${colorAt(i)}" stroke-width="2"/>`).join('') +
      dots.join('') +
      `</g>`
    );
  });
  return (
    open(o, l) +
    yAxis(l, yTicks, y, o.yLabel) +
    xAxis(
      l,
      thin(xs).map((v) => ({ at: x(v), label: String(v) })),
      o.xLabel,
    ) +
    paths.join('') +
    legend(
      l,
      o.series.map((s) => s.name),
    ) +
    `</svg>`
  );
}

/** One bar per category, its stacks piled bottom-up in the given order. Negative or non-finite values are skipped. */
export function stackedBarChart(o: StackedBarOptions): string {
  const n = o.categories.length;
  const value = (s: { values: number[] }, i: number): number => {
    const v = s.values[i];
    return v !== undefined && Number.isFinite(v) && v > 0 ? v : 0;
  };
  const totals = o.categories.map((_, i) => o.stacks.reduce((sum, s) => sum + value(s, i), 0));
  if (n === 0 || o.stacks.length === 0 || (!o.yDomain && totals.every((t) => t === 0))) return empty(o);
  const l = layout(o);
  const yTicks = o.yDomain ? niceTicks(o.yDomain[0], o.yDomain[1]) : niceTicks(0, Math.max(...totals));
  const y = scaleLinear([yTicks[0]!, yTicks[yTicks.length - 1]!], [l.y0, l.y1]);
  const band = (l.x1 - l.x0) / n;
  const barWidth = Math.max(1, band * 0.7);
  const centre = (i: number): number => l.x0 + band * (i + 0.5);
  const bars = o.categories.map((cat, i) => {
    let base = 0;
    const rects = o.stacks.map((s, k) => {
      const v = value(s, i);
      if (v === 0) return '';
      const top = y(base + v);
      const h = y(base) - top;
      base += v;
      return (
        `<rect x="${fmt(centre(i) - barWidth / 2)}" y="${fmt(top)}" width="${fmt(barWidth)}" height="${fmt(h)}" fill="${colorAt(k)}">` +
        `<title>${escapeXml(`${cat}: ${s.name} ${formatTick(v)}`)}</title></rect>`
      );
    });
    return `<g class="bar" data-category="${escapeXml(cat)}">${rects.join('')}</g>`;
  });
  const xTicks = thin(o.categories.map((c, i) => ({ at: centre(i), label: String(c) })));
  return (
    open(o, l) +
    yAxis(l, yTicks, y, o.yLabel) +
    xAxis(l, xTicks, o.xLabel) +
    bars.join('') +
    legend(
      l,
      o.stacks.map((s) => s.name),
    ) +
    `</svg>`
  );
}
