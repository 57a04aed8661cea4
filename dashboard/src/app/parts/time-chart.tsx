// A line chart over time (uPlot, drawn on a canvas): the figure is labelled with what it shows and
// a sentence of its numbers (lowest, highest, last) for those who cannot see it. Times are in the
// viewer's own time zone; colours follow the page's scheme.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface ChartSeries {
  label: string;
  values: (number | null)[];
}

function cssColour(name: string, fallback: string): string {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value === '' ? fallback : value;
}

const LINE_COLOURS = ['--accent', '--bad-text', '--good-text'];

/** Lowest, highest and last measured value of a series, in words. */
export function describeSeries(series: ChartSeries, unit: string): string {
  const measured = series.values.filter((v): v is number => v !== null);
  if (measured.length === 0) return `${series.label}: not measured.`;
  const round = (v: number) => (Math.abs(v) >= 100 ? Math.round(v) : Math.round(v * 10) / 10);
  return `${series.label}: lowest ${round(Math.min(...measured))} ${unit}, highest ${round(Math.max(...measured))} ${unit}, last ${round(measured[measured.length - 1]!)} ${unit}.`;
}

export function TimeChart({ title, unit, times, series }: { title: string; unit: string; times: number[]; series: ChartSeries[] }) {
  const holder = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = holder.current;
    if (element === null) return;
    const text = cssColour('--text', '#16181d');
    const grid = cssColour('--border', '#d3d7de');
    const axis = { stroke: text, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const plot = new uPlot(
      {
        width: Math.max(240, element.clientWidth),
        height: 200,
        legend: { show: true },
        scales: { x: { time: true } },
        axes: [axis, { ...axis, label: unit, size: 60 }],
        series: [{}, ...series.map((s, index) => ({ label: s.label, stroke: cssColour(LINE_COLOURS[index % LINE_COLOURS.length]!, '#1d4ed8'), width: 2, spanGaps: false }))],
      },
      [times.map((ms) => ms / 1000), ...series.map((s) => s.values)],
      element,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(240, element.clientWidth), height: 200 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [times, series, unit]);
  const summary = series.map((s) => describeSeries(s, unit)).join(' ');
  return (
    <figure class="chart">
      <figcaption>{title}</figcaption>
      <div ref={holder} role="img" aria-label={`${title}. ${summary}`} />
    </figure>
  );
}
