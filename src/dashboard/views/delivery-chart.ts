import type { DeliveryMinute } from '../../store/overview-store.js';
import { html, type SafeHtml } from './html.js';

const MINUTE_MS = 60_000;
const HOUR_MS = 60 * MINUTE_MS;
/**
 * Two drawings of the same figures: SVG text scales with the drawing, so one drawing wide enough
 * for a desktop has unreadable labels on a phone. The stylesheet shows the one that fits the screen.
 */
const GEOMETRIES = {
  wide: { width: 900, height: 200, top: 14, bottom: 30, left: 52, right: 10 },
  narrow: { width: 420, height: 210, top: 14, bottom: 30, left: 44, right: 8 },
} as const;
type Geometry = (typeof GEOMETRIES)[keyof typeof GEOMETRIES];
/**
 * A minute is under a unit wide (838 units for 1,440 minutes): a lone busy minute would be a
 * hairline, so every bar is at least this wide, and close neighbours overlap (same colours).
 */
const MIN_BAR_WIDTH = 2.5;

const count = (n: number) => n.toLocaleString('en-US');
/** 1,234 as "1.2k" on the axis, where the space is a few characters. */
const compact = (n: number) => (n < 10_000 ? count(n) : `${(n / 1000).toFixed(n < 100_000 ? 1 : 0)}k`);
const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);

/** The window's attempts, hour by hour (UTC), for the tooltips and the table; hours without any are left out. */
export function hourlyTotals(minutes: readonly DeliveryMinute[]): { hour: number; attempts: number; failedAttempts: number }[] {
  const hours = new Map<number, { hour: number; attempts: number; failedAttempts: number }>();
  for (const m of minutes) {
    const hour = m.minute - (m.minute % HOUR_MS);
    const total = hours.get(hour) ?? { hour, attempts: 0, failedAttempts: 0 };
    total.attempts += m.attempts;
    total.failedAttempts += m.failedAttempts;
    hours.set(hour, total);
  }
  return [...hours.values()].sort((a, b) => a.hour - b.hour);
}

/**
 * Attempts finished per minute over the window [from, from + minutes), drawn on the server as the
 * usage chart is: one bar per minute with attempts, its failed part in red at its foot (failed
 * attempts are a part of those finished). An invisible band per hour carries that hour's totals as
 * a tooltip; role="img" and the label summarise it for a screen reader.
 */
export function deliveryChart(o: { minutes: readonly DeliveryMinute[]; from: number; windowMinutes: number }): SafeHtml {
  return html`${drawing(o, 'wide', GEOMETRIES.wide)}${drawing(o, 'narrow', GEOMETRIES.narrow)}`;
}

function drawing(o: { minutes: readonly DeliveryMinute[]; from: number; windowMinutes: number }, name: keyof typeof GEOMETRIES, CHART: Geometry): SafeHtml {
  const plotWidth = CHART.width - CHART.left - CHART.right;
  const plotHeight = CHART.height - CHART.top - CHART.bottom;
  const base = CHART.top + plotHeight;
  const slot = plotWidth / o.windowMinutes;
  const x = (at: number) => CHART.left + ((at - o.from) / MINUTE_MS) * slot;
  const max = Math.max(1, ...o.minutes.map((m) => m.attempts));
  const height = (n: number) => (n === 0 ? 0 : Math.max(1, (n / max) * plotHeight));
  const width = Math.max(slot, MIN_BAR_WIDTH);
  // One path per series: a rectangle per minute, so a day of busy minutes is two elements, not 2,880.
  const bars = (value: (m: DeliveryMinute) => number) =>
    o.minutes
      .filter((m) => value(m) > 0)
      .map((m) => `M${x(m.minute).toFixed(2)} ${base}v${(-height(value(m))).toFixed(2)}h${width.toFixed(2)}V${base}z`)
      .join('');
  const until = o.from + o.windowMinutes * MINUTE_MS;
  const total = o.minutes.reduce((sum, m) => sum + m.attempts, 0);
  const failed = o.minutes.reduce((sum, m) => sum + m.failedAttempts, 0);
  const busiest = o.minutes.reduce<DeliveryMinute | null>((best, m) => (best === null || m.attempts > best.attempts ? m : best), null);
  // A label every 6 hours (UTC), where one fits inside the plot.
  const ticks: number[] = [];
  for (let at = o.from - (o.from % (6 * HOUR_MS)) + 6 * HOUR_MS; at < until; at += 6 * HOUR_MS) ticks.push(at);
  // Tooltips need a pointer: the wide drawing only.
  const bands = name === 'narrow' ? [] : hourlyTotals(o.minutes).map((h) => {
    const start = Math.max(h.hour, o.from);
    const end = Math.min(h.hour + HOUR_MS, until);
    return html`<rect class="band" x="${x(start).toFixed(2)}" y="${CHART.top}" width="${(x(end) - x(start)).toFixed(2)}" height="${plotHeight}"><title>${hhmm(h.hour)}–${hhmm(h.hour + HOUR_MS)} UTC: ${count(h.attempts)} attempts finished, ${count(h.failedAttempts)} failed</title></rect>`;
  });
  const label = `Attempts finished per minute over the last 24 hours: ${count(total)} in all, ${count(failed)} failed` +
    (busiest ? `; at most ${count(busiest.attempts)} in a minute, at ${hhmm(busiest.minute)} UTC` : '');
  return html`<svg class="chart chart-deliveries chart-${name}" viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-label="${label}">
    <title>${label}</title>
    <line class="gridline" x1="${CHART.left}" x2="${CHART.width - CHART.right}" y1="${CHART.top}" y2="${CHART.top}"></line>
    <line class="baseline" x1="${CHART.left}" x2="${CHART.width - CHART.right}" y1="${base}" y2="${base}"></line>
    <text class="axis" x="${CHART.left - 6}" y="${CHART.top + 4}" text-anchor="end">${compact(max)}</text>
    <text class="axis" x="${CHART.left - 6}" y="${base + 4}" text-anchor="end">0</text>
    <path class="bar" d="${bars((m) => m.attempts)}"></path>
    <path class="bar-failed" d="${bars((m) => m.failedAttempts)}"></path>
    ${ticks.map(
      (at) => html`<line class="tick" x1="${x(at).toFixed(2)}" x2="${x(at).toFixed(2)}" y1="${base}" y2="${base + 4}"></line>
        <text class="axis" x="${x(at).toFixed(2)}" y="${CHART.height - 8}" text-anchor="middle">${hhmm(at)}</text>`,
    )}
    ${bands}
  </svg>`;
}
