// Plain SVG charts that render on GitHub (no scripts, no external fonts, a white background):
// a line chart with log axes and a grouped bar chart with a log value axis.

/** One line: points in data units; `undefined` y values leave a gap. */
export interface Series {
  name: string;
  points: Array<[x: number, y: number | undefined]>;
  /** Drawn dashed: for baselines. */
  dashed?: boolean;
}

/** Options for {@linkcode lineChart}. */
export interface LineChartOptions {
  title: string;
  xLabel: string;
  yLabel: string;
  /** Where to put x ticks and what to write there. */
  xTicks: Array<[x: number, label: string]>;
  /** The x axis is logarithmic (else categorical positions 0, 1, 2, … are expected). */
  logX: boolean;
}

/** Options for {@linkcode barChart}. */
export interface BarChartOptions {
  title: string;
  yLabel: string;
  /** The name of each bar within a group, in order. */
  bars: string[];
}

const WIDTH = 760;
const HEIGHT = 420;
const MARGIN = { left: 78, right: 200, top: 44, bottom: 58 };
/** Bar charts need room below for their slanted group labels. */
const BAR_LABEL_ROOM = 60;
const PALETTE = [
  "#1f77b4",
  "#ff7f0e",
  "#2ca02c",
  "#d62728",
  "#9467bd",
  "#8c564b",
  "#e377c2",
  "#7f7f7f",
  "#bcbd22",
  "#17becf",
];

/** A line chart, y axis logarithmic. */
export function lineChart(series: readonly Series[], options: LineChartOptions): string {
  const xs = options.xTicks.map(([x]) => x);
  const ys = series.flatMap((s) => s.points.map(([, y]) => y)).filter(isPositive);
  const plot = plotArea();
  // A little room either side, so the end points do not sit on the axes.
  const xMap = options.logX
    ? logScale(Math.min(...xs) / 1.4, Math.max(...xs) * 1.4, plot.left, plot.right)
    : linearScale(Math.min(...xs) - 0.3, Math.max(...xs) + 0.3, plot.left, plot.right);
  const [yMin, yMax] = logBounds(ys);
  const yMap = logScale(yMin, yMax, plot.bottom, plot.top);
  const parts = [header(options.title), ...logYAxis(yMin, yMax, yMap, plot, options.yLabel)];
  for (const [x, label] of options.xTicks) {
    const px = xMap(x);
    parts.push(line(px, plot.bottom, px, plot.bottom + 5, "#333"));
    parts.push(text(px, plot.bottom + 20, label, { anchor: "middle" }));
  }
  parts.push(text((plot.left + plot.right) / 2, HEIGHT - 14, options.xLabel, { anchor: "middle" }));
  series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length];
    const dash = s.dashed ? ' stroke-dasharray="6 4"' : "";
    let path = "";
    let pen = false;
    for (const [x, y] of s.points) {
      if (!isPositive(y)) {
        pen = false;
        continue;
      }
      path += `${pen ? "L" : "M"}${fixed(xMap(x))},${fixed(yMap(y))} `;
      pen = true;
    }
    if (path) {
      parts.push(
        `<path d="${path.trim()}" fill="none" stroke="${color}" stroke-width="2"${dash}/>`,
      );
    }
    for (const [x, y] of s.points) {
      if (isPositive(y)) {
        parts.push(`<circle cx="${fixed(xMap(x))}" cy="${fixed(yMap(y))}" r="3" fill="${color}"/>`);
      }
    }
    parts.push(...legendEntry(i, s.name, color, s.dashed ?? false));
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}

/** A grouped bar chart, y axis logarithmic; `undefined` values draw no bar. */
export function barChart(
  groups: ReadonlyArray<{ label: string; values: ReadonlyArray<number | undefined> }>,
  options: BarChartOptions,
): string {
  const ys = groups.flatMap((g) => g.values).filter(isPositive);
  const height = HEIGHT + BAR_LABEL_ROOM;
  const plot = { ...plotArea(), bottom: height - MARGIN.bottom - BAR_LABEL_ROOM };
  const [yMin, yMax] = logBounds(ys);
  const yMap = logScale(yMin, yMax, plot.bottom, plot.top);
  const parts = [
    header(options.title, height),
    ...logYAxis(yMin, yMax, yMap, plot, options.yLabel),
  ];
  const groupWidth = (plot.right - plot.left) / Math.max(1, groups.length);
  const barWidth = groupWidth * 0.8 / Math.max(1, options.bars.length);
  groups.forEach((group, g) => {
    const left = plot.left + g * groupWidth + groupWidth * 0.1;
    group.values.forEach((value, b) => {
      if (!isPositive(value)) return;
      const y = yMap(value);
      parts.push(
        `<rect x="${fixed(left + b * barWidth)}" y="${fixed(y)}" width="${
          fixed(barWidth - 1)
        }" height="${fixed(plot.bottom - y)}" fill="${PALETTE[b % PALETTE.length]}"/>`,
      );
    });
    const cx = left + groupWidth * 0.45;
    parts.push(
      text(cx, plot.bottom + 14, group.label, { anchor: "end", rotate: -35, size: 11 }),
    );
  });
  options.bars.forEach((name, b) => {
    parts.push(...legendEntry(b, name, PALETTE[b % PALETTE.length], false));
  });
  parts.push("</svg>");
  return parts.join("\n") + "\n";
}

interface Plot {
  left: number;
  right: number;
  top: number;
  bottom: number;
}

function plotArea(): Plot {
  return {
    left: MARGIN.left,
    right: WIDTH - MARGIN.right,
    top: MARGIN.top,
    bottom: HEIGHT - MARGIN.bottom,
  };
}

function header(title: string, height = HEIGHT): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" ` +
    `viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    text(WIDTH / 2, 24, title, { anchor: "middle", size: 15, bold: true }),
  ].join("\n");
}

function logYAxis(
  min: number,
  max: number,
  map: (y: number) => number,
  plot: Plot,
  label: string,
): string[] {
  const parts = [
    line(plot.left, plot.top, plot.left, plot.bottom, "#333"),
    line(plot.left, plot.bottom, plot.right, plot.bottom, "#333"),
  ];
  for (const [value, major] of logTicks(min, max)) {
    const y = map(value);
    parts.push(line(plot.left, y, plot.right, y, major ? "#d0d0d0" : "#eeeeee"));
    if (major || logTicks(min, max).length <= 12) {
      parts.push(text(plot.left - 6, y + 4, tickLabel(value), { anchor: "end", size: 11 }));
    }
  }
  const cy = (plot.top + plot.bottom) / 2;
  parts.push(text(18, cy, label, { anchor: "middle", rotate: -90 }));
  return parts;
}

function legendEntry(index: number, name: string, color: string, dashed: boolean): string[] {
  const x = WIDTH - MARGIN.right + 16;
  const y = MARGIN.top + 8 + index * 20;
  const dash = dashed ? ' stroke-dasharray="6 4"' : "";
  return [
    `<line x1="${x}" y1="${y}" x2="${
      x + 22
    }" y2="${y}" stroke="${color}" stroke-width="3"${dash}/>`,
    text(x + 28, y + 4, name, { size: 11 }),
  ];
}

/** Ticks at 1, 2 and 5 times the powers of ten within [min, max]; `true` marks powers of ten. */
function logTicks(min: number, max: number): Array<[number, boolean]> {
  const ticks: Array<[number, boolean]> = [];
  for (let exp = Math.floor(Math.log10(min)); exp <= Math.ceil(Math.log10(max)); exp++) {
    for (const m of [1, 2, 5]) {
      const value = m * 10 ** exp;
      if (value >= min * 0.999 && value <= max * 1.001) ticks.push([value, m === 1]);
    }
  }
  return ticks;
}

function logBounds(values: number[]): [number, number] {
  if (values.length === 0) return [1, 10];
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const min = 10 ** Math.floor(Math.log10(lo));
  let max = 10 ** Math.ceil(Math.log10(hi));
  if (max <= min) max = min * 10;
  return [min, max];
}

function logScale(d0: number, d1: number, r0: number, r1: number): (v: number) => number {
  const l0 = Math.log10(d0);
  const span = Math.log10(d1) - l0 || 1;
  return (v) => r0 + (Math.log10(v) - l0) / span * (r1 - r0);
}

function linearScale(d0: number, d1: number, r0: number, r1: number): (v: number) => number {
  const span = d1 - d0 || 1;
  return (v) => r0 + (v - d0) / span * (r1 - r0);
}

function tickLabel(value: number): string {
  if (value >= 1e6) return `${value / 1e6}M`;
  if (value >= 1e3) return `${value / 1e3}k`;
  return String(Number(value.toPrecision(3)));
}

function line(x1: number, y1: number, x2: number, y2: number, stroke: string): string {
  return `<line x1="${fixed(x1)}" y1="${fixed(y1)}" x2="${fixed(x2)}" y2="${
    fixed(y2)
  }" stroke="${stroke}" stroke-width="1"/>`;
}

function text(
  x: number,
  y: number,
  content: string,
  style: { anchor?: string; size?: number; bold?: boolean; rotate?: number } = {},
): string {
  const attrs = [`x="${fixed(x)}"`, `y="${fixed(y)}"`];
  if (style.anchor) attrs.push(`text-anchor="${style.anchor}"`);
  if (style.size) attrs.push(`font-size="${style.size}"`);
  if (style.bold) attrs.push(`font-weight="bold"`);
  if (style.rotate) attrs.push(`transform="rotate(${style.rotate} ${fixed(x)} ${fixed(y)})"`);
  return `<text ${attrs.join(" ")} fill="#222">${escape(content)}</text>`;
}

function escape(value: string): string {
  return value.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function fixed(value: number): string {
  return value.toFixed(1);
}

function isPositive(value: number | undefined): value is number {
  return value !== undefined && Number.isFinite(value) && value > 0;
}
