// Numbers, durations and times as the page shows them.
import { view } from './view.js';

export const fmtInt = (n) => Number(n).toLocaleString('en-US');

// Lateness is in ms and often below 1: uPlot's default tick labels read '0,000' there.
export const fmtMs = (ms) => {
  if (ms >= 1000) return `${(ms / 1000).toLocaleString('en-US', { maximumFractionDigits: 2 })} s`;
  return `${ms.toLocaleString('en-US', { maximumFractionDigits: ms >= 10 ? 0 : 2 })} ms`;
};

export const fmtTime = (ms) =>
  new Date(ms).toLocaleTimeString('en-GB', { hour12: false }) +
  '.' +
  String(new Date(ms).getMilliseconds()).padStart(3, '0');

/** `ms` (epoch, by the server's clock) relative to now: 'in 3.2 s', '40 ms ago'. */
export const fmtRel = (ms) => {
  const d = ms - (Date.now() + view.skew);
  const a = Math.abs(d);
  const text =
    a < 1000
      ? `${Math.round(a)} ms`
      : a < 60_000
        ? `${(a / 1000).toFixed(1)} s`
        : a < 3_600_000
          ? `${Math.floor(a / 60_000)} min ${Math.round((a % 60_000) / 1000)} s`
          : `${(a / 3_600_000).toFixed(1)} h`;
  return d >= 0 ? `in ${text}` : `${text} ago`;
};
