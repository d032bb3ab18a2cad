import type { DeliveryMinute } from '../deliveries/delivery-minutes.js';
import { html, type SafeHtml } from './html.js';

const MINUTE_MS = 60_000;

const WIDTH = 720;
const HEIGHT = 200;
const PAD = { left: 56, right: 56, top: 16, bottom: 28 };

/**
 * The minutes as an inline SVG, drawn with presentation attributes only (the page's CSP allows
 * no inline style): bars of deliveries a minute (left scale), the mean latency as a line with
 * a dot a minute that had deliveries (right scale).
 */
export function deliveryChart(minutes: readonly DeliveryMinute[]): SafeHtml {
  const plotWidth = WIDTH - PAD.left - PAD.right;
  const plotHeight = HEIGHT - PAD.top - PAD.bottom;
  const slot = plotWidth / Math.max(1, minutes.length);
  const maxCount = niceCeiling(Math.max(1, ...minutes.map((minute) => minute.delivered)));
  const maxLatency = niceCeiling(Math.max(1, ...minutes.map((minute) => minute.meanMs ?? 0)));
  const y = (value: number, max: number) => PAD.top + plotHeight - (value / max) * plotHeight;
  const bars = minutes.map((minute, index) => {
    if (minute.delivered === 0) return '';
    const top = y(minute.delivered, maxCount);
    return html`<rect x="${fixed(PAD.left + index * slot + 1)}" y="${fixed(top)}" width="${fixed(Math.max(1, slot - 2))}" height="${fixed(PAD.top + plotHeight - top)}" fill="#8fb8de"><title>${timeOf(minute.start)}: ${minute.delivered} delivered</title></rect>`;
  });
  const points = minutes.flatMap((minute, index) =>
    minute.meanMs === undefined ? [] : [{ x: PAD.left + index * slot + slot / 2, y: y(minute.meanMs, maxLatency), minute }],
  );
  const line = points.map((point, index) => `${index === 0 ? 'M' : 'L'}${fixed(point.x)} ${fixed(point.y)}`).join(' ');
  const dots = points.map(
    ({ x, y: top, minute }) =>
      html`<circle cx="${fixed(x)}" cy="${fixed(top)}" r="2.5" fill="#c0392b"><title>${timeOf(minute.start)}: mean ${milliseconds(minute.meanMs!)}, slowest ${milliseconds(minute.maxMs!)}</title></circle>`,
  );
  const bottom = PAD.top + plotHeight;
  const first = minutes[0];
  const last = minutes[minutes.length - 1];
  return html`<svg id="delivery-chart" xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" role="img" aria-labelledby="delivery-chart-title">
<title id="delivery-chart-title">Deliveries a minute (bars) and their mean latency (line), last ${minutes.length} minutes</title>
<rect x="0" y="0" width="${WIDTH}" height="${HEIGHT}" fill="#ffffff"/>
<line x1="${PAD.left}" y1="${bottom}" x2="${WIDTH - PAD.right}" y2="${bottom}" stroke="#555555"/>
<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${bottom}" stroke="#8fb8de"/>
<line x1="${WIDTH - PAD.right}" y1="${PAD.top}" x2="${WIDTH - PAD.right}" y2="${bottom}" stroke="#c0392b"/>
<text x="${PAD.left - 6}" y="${PAD.top + 4}" text-anchor="end" font-size="11" fill="#333333">${maxCount}/min</text>
<text x="${PAD.left - 6}" y="${bottom}" text-anchor="end" font-size="11" fill="#333333">0</text>
<text x="${WIDTH - PAD.right + 6}" y="${PAD.top + 4}" font-size="11" fill="#333333">${milliseconds(maxLatency)}</text>
<text x="${WIDTH - PAD.right + 6}" y="${bottom}" font-size="11" fill="#333333">0</text>
<text x="${PAD.left}" y="${HEIGHT - 8}" font-size="11" fill="#333333">${first === undefined ? '' : timeOf(first.start)}</text>
<text x="${WIDTH - PAD.right}" y="${HEIGHT - 8}" text-anchor="end" font-size="11" fill="#333333">${last === undefined ? '' : timeOf(last.start + MINUTE_MS)} UTC</text>
<g data-series="throughput">${bars}</g>
<path data-series="latency" data-points="${points.length}" d="${line}" fill="none" stroke="#c0392b" stroke-width="2"/>
<g data-series="latency-points">${dots}</g>
</svg>`;
}

/** 1, 2 or 5 times a power of ten, at least `value`: scales that read easily. */
function niceCeiling(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value));
  return [1, 2, 5, 10].map((step) => step * power).find((candidate) => candidate >= value) ?? 10 * power;
}

function fixed(value: number): string {
  return value.toFixed(1);
}

function timeOf(ms: number): string {
  return new Date(ms).toISOString().slice(11, 16);
}

export function milliseconds(ms: number): string {
  return ms < 1_000 ? `${Math.round(ms)} ms` : ms < 60_000 ? `${(ms / 1_000).toFixed(1)} s` : `${(ms / 60_000).toFixed(1)} min`;
}
