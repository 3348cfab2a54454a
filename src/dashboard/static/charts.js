// The queue page's three charts (uPlot): jobs falling due per minute ahead, throughput and
// lateness over the last five minutes, from the queue's counters in Redis.
/* global uPlot, window */
import { $ } from './dom.js';
import { fmtInt, fmtMs } from './format.js';

const charts = {};
function chartWidth(id) {
  return Math.max(260, $(id).clientWidth || 300);
}
/** Create the three charts, empty, sized to their boxes (and resized with the window). */
export function makeCharts() {
  const axis = { stroke: '#6b7280', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#eef0f3' } };
  charts.due = new uPlot(
    {
      width: chartWidth('#chart-due'),
      height: 170,
      legend: { show: false },
      cursor: { y: false },
      scales: { x: { time: false } },
      axes: [
        { ...axis, values: (u, v) => v.map((m) => `+${m}m`) },
        { ...axis, size: 44 },
      ],
      series: [
        {},
        {
          label: 'due',
          fill: 'rgba(79,70,229,0.55)',
          stroke: '#4f46e5',
          paths: uPlot.paths.bars({ size: [0.8, 24] }),
          points: { show: false },
        },
      ],
    },
    [[], []],
    $('#chart-due'),
  );
  charts.throughput = new uPlot(
    {
      width: chartWidth('#chart-throughput'),
      height: 170,
      legend: { show: true, live: false },
      axes: [axis, { ...axis, size: 40 }],
      series: [
        {},
        { label: 'completed', stroke: '#059669', width: 2, fill: 'rgba(5,150,105,0.08)' },
        { label: 'retried', stroke: '#d97706', width: 1.5 },
        { label: 'dead', stroke: '#dc2626', width: 1.5 },
      ],
    },
    [[], [], [], []],
    $('#chart-throughput'),
  );
  charts.lateness = new uPlot(
    {
      width: chartWidth('#chart-lateness'),
      height: 170,
      legend: { show: true, live: false },
      // At least 0-1 ms, so jobs that all start within a millisecond still get distinct ticks.
      scales: { y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      axes: [
        axis,
        {
          ...axis,
          size: 60,
          values: (u, splits) => {
            const labels = splits.map(fmtMs);
            // Canvas text is invisible to screen readers (and to tests): say the scale in words.
            u.root.setAttribute('aria-label', `lateness chart, y axis: ${labels.join(' / ')}`);
            return labels;
          },
        },
      ],
      series: [
        {},
        { label: 'avg', stroke: '#2563eb', width: 2, spanGaps: true, points: { show: true, size: 5 } },
        {
          // The upper bound of the histogram bucket holding the 99th percentile.
          label: 'p99 ≤',
          stroke: '#93c5fd',
          width: 1,
          dash: [4, 3],
          spanGaps: true,
          points: { show: true, size: 4 },
        },
      ],
    },
    [[], [], []],
    $('#chart-lateness'),
  );
  window.addEventListener('resize', () => {
    for (const [key, id] of [
      ['due', '#chart-due'],
      ['throughput', '#chart-throughput'],
      ['lateness', '#chart-lateness'],
    ]) {
      charts[key].setSize({ width: chartWidth(id), height: 170 });
    }
  });
}

// Sum per-second samples into 5 s buckets, so a few jobs a second read as a rate, not as spikes.
function rebucket(t, ys, size, mode) {
  const outT = [];
  const outYs = ys.map(() => []);
  for (let i = 0; i < t.length; i += size) {
    outT.push(t[Math.min(i + size - 1, t.length - 1)]);
    ys.forEach((y, k) => {
      const part = y.slice(i, i + size).filter((v) => v !== null);
      if (mode[k] === 'rate') outYs[k].push(part.reduce((a, b) => a + b, 0) / size);
      else if (mode[k] === 'max') outYs[k].push(part.length ? Math.max(...part) : null);
      else outYs[k].push(part.length ? part.reduce((a, b) => a + b, 0) / part.length : null);
    });
  }
  return [outT, ...outYs];
}

/** Draw the charts from a queue overview (GET /api/queues/:name). */
export function drawCharts(o) {
  const minutes = o.due.counts.map((_, i) => i + 1);
  charts.due.setData([minutes, o.due.counts]);
  const total = o.due.counts.reduce((a, b) => a + b, 0);
  $('#due-total').textContent = o.due.overdue
    ? `${fmtInt(total)} jobs, ${fmtInt(o.due.overdue)} due now`
    : `${fmtInt(total)} jobs`;
  // From the queue's counters in Redis: every worker's activity, wherever it runs.
  const a = o.activity;
  charts.throughput.setData(rebucket(a.t, [a.completed, a.failed, a.dead], 5, ['rate', 'rate', 'rate']));
  charts.lateness.setData(rebucket(a.t, [a.latenessAvg, a.latenessP99], 5, ['avg', 'max']));
}
