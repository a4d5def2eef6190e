import {
  escapeXml,
  formatTick,
  lineChart,
  niceTicks,
  scaleLinear,
  stackedBarChart,
} from '../../../cli/report-svg';

describe('report SVG helpers', () => {
  test('scaleLinear maps a domain onto a range (inverted y too), a flat domain to the middle', () => {
    const y = scaleLinear([0, 10], [200, 0]);
    expect(y(0)).toBe(200);
    expect(y(5)).toBe(100);
    expect(y(10)).toBe(0);
    expect(scaleLinear([3, 3], [0, 100])(3)).toBe(50);
  });

  test('niceTicks cover the data with round steps and survive degenerate input', () => {
    expect(niceTicks(0, 1)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
    expect(niceTicks(-0.13, 0.87)).toEqual([-0.2, 0, 0.2, 0.4, 0.6, 0.8, 1]);
    const t = niceTicks(3, 97);
    expect(t[0]).toBeLessThanOrEqual(3);
    expect(t[t.length - 1]).toBeGreaterThanOrEqual(97);
    expect(niceTicks(5, 5).length).toBeGreaterThanOrEqual(2);
    expect(niceTicks(0, 0)).toEqual([-1, -0.5, 0, 0.5, 1]);
    expect(niceTicks(NaN, 1)).toEqual([0, 1]);
    expect(niceTicks(1, -1)[0]).toBe(-1);
    expect(formatTick(0.30000000000000004)).toBe('0.3');
    expect(formatTick(25000)).toBe('25k');
  });

  test('escapeXml neutralises markup', () => {
    expect(escapeXml(`<script>"x" & 'y'</script>`)).toBe(
      '&lt;script&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/script&gt;',
    );
  });

  test('lineChart draws axes, a path per series, dots, a legend, and breaks lines at NaN', () => {
    const svg = lineChart({
      id: 'p',
      title: 'Reward <b>',
      xLabel: 'iteration',
      series: [
        {
          name: 'chal<lenger>',
          points: [
            [1, 0.1],
            [2, NaN],
            [3, 0.3],
            [4, 0.5],
          ],
        },
        { name: 'reasoner', points: [[1, Infinity]] },
      ],
    });
    expect(svg).toMatch(/^<svg id="p" /);
    expect(svg).toContain('Reward &lt;b&gt;');
    expect(svg).toContain('chal&lt;lenger&gt;');
    expect(svg).not.toMatch(/NaN|Infinity|<b>|<lenger>/);
    expect(svg).toContain('class="x-axis"');
    expect(svg).toContain('class="y-axis"');
    // two segments for the first series (1) and (3,4); none for the second
    expect(svg.match(/<path /g)).toHaveLength(2);
    expect(svg.match(/<circle /g)).toHaveLength(3);
    // the x axis spans 1..4: first dot at the left pad, last at the right
    expect(svg).toContain('cx="66"');
    expect(svg).toContain('cx="400"');
  });

  test('lineChart with a fixed domain keeps 0..1 whatever the data', () => {
    const svg = lineChart({
      id: 'v',
      title: 'v',
      yDomain: [0, 1],
      series: [{ name: 's', points: [[1, 0.5]] }],
    });
    expect(svg).toContain('>0</text>');
    expect(svg).toContain('>1</text>');
  });

  test('empty data gives a labelled "no data" chart', () => {
    for (const svg of [
      lineChart({ id: 'e', title: 'E', series: [] }),
      lineChart({ id: 'e', title: 'E', series: [{ name: 's', points: [[1, NaN]] }] }),
      stackedBarChart({ id: 'e', title: 'E', categories: [], stacks: [] }),
      stackedBarChart({ id: 'e', title: 'E', categories: [1], stacks: [{ name: 's', values: [0] }] }),
    ]) {
      expect(svg).toContain('id="e"');
      expect(svg).toContain('no data');
      expect(svg).not.toContain('NaN');
    }
  });

  test('stackedBarChart piles segments bottom-up and skips non-finite and negative values', () => {
    const svg = stackedBarChart({
      id: 's',
      title: 'Stages',
      categories: [1, 2],
      stacks: [
        { name: 'solve', values: [10, NaN] },
        { name: 'judge', values: [10, -3] },
        { name: 'filter', values: [0, 5] },
      ],
    });
    expect(svg.match(/<rect [^>]*><title>/g)).toHaveLength(3); // two segments in bar 1, one in bar 2
    expect(svg.match(/<g class="bar"/g)).toHaveLength(2);
    expect(svg).not.toContain('NaN');
    const heights = [
      ...svg.matchAll(/<rect x="[^"]+" y="([^"]+)" width="[^"]+" height="([^"]+)" fill="[^"]+"><title>/g),
    ]
      .slice(0, 2)
      .map((m) => ({ y: Number(m[1]), h: Number(m[2]) }));
    const [first, second] = heights;
    // the second segment of bar 1 sits right on top of the first, same height
    expect(second?.h).toBeCloseTo(first?.h ?? NaN, 0);
    expect((second?.y ?? NaN) + (second?.h ?? NaN)).toBeCloseTo(first?.y ?? NaN, 0);
  });
});
