/** The `--bounds` flag of the add benches: bounds of one add script call (src/queue/add-calls.ts). */
import { ADD_CALL_BOUNDS, type AddCallBounds } from '../../src/queue/add-calls.js';

/**
 * `--bounds=<jobs>[x<bytes>],...` (bytes may end in k or m; none given: any bytes), each with
 * `inFlight` calls out at a time; the bounds in use when the flag is absent.
 */
export function boundsFlag(inFlight: number = ADD_CALL_BOUNDS.inFlight): AddCallBounds[] {
  const given = process.argv.find((a) => a.startsWith('--bounds='))?.slice('--bounds='.length);
  if (given === undefined) return [{ ...ADD_CALL_BOUNDS, inFlight }];
  return given.split(',').map((text) => {
    const match = /^(\d+)(?:x(\d+)([km]?))?$/.exec(text);
    if (!match) throw new Error(`--bounds: '${text}' is not <jobs> or <jobs>x<bytes>[k|m]`);
    const unit = match[3] === 'k' ? 1024 : match[3] === 'm' ? 1024 * 1024 : 1;
    const bytes = match[2] === undefined ? Infinity : Number(match[2]) * unit;
    return { jobs: Number(match[1]), bytes, inFlight };
  });
}

/** `200 jobs / 256 KiB / 2 out`. */
export function boundsLabel(b: AddCallBounds): string {
  const bytes = b.bytes === Infinity ? 'any bytes' : `${Math.round(b.bytes / 1024)} KiB`;
  return `${b.jobs} jobs / ${bytes} / ${b.inFlight} out`;
}

/** `--payload=<bytes>`: pad each payload to about that many bytes (0: none). */
export function payloadFlag(): number {
  const given = process.argv.find((a) => a.startsWith('--payload='))?.slice('--payload='.length);
  const value = Number(given ?? 0);
  if (!Number.isInteger(value) || value < 0)
    throw new Error('--payload must be a whole number of bytes >= 0');
  return value;
}
