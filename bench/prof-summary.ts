/**
 * Self time by function from .cpuprofile files (node --cpu-prof), to find hot spots:
 * `node --import tsx bench/prof-summary.ts bench/results/prof/*.cpuprofile`.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const selfMicros = new Map<string, number>();
let total = 0;
for (const file of process.argv.slice(2)) {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)?.callFrame;
    if (!frame) return;
    const where = frame.url.replace(/^.*\/(node_modules|src|bench)\//, '$1/');
    const key = `${frame.functionName || '(anonymous)'} ${where}:${frame.lineNumber + 1}`;
    const dt = profile.timeDeltas[i] ?? 0;
    selfMicros.set(key, (selfMicros.get(key) ?? 0) + dt);
    total += dt;
  });
}
const top = [...selfMicros].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env['TOP'] ?? 25));
console.log(`total sampled: ${(total / 1e6).toFixed(2)} s`);
for (const [key, us] of top) console.log(`${((us / total) * 100).toFixed(1).padStart(5)}%  ${key}`);
