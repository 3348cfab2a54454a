/**
 * The job ids of one add.lua call, read off its ARGV as sent (docs/PROTOCOL.md, "Adding a job"):
 * the per-job form (`N`, then 5 values per job from ARGV[5]) or the packed one (`P<N>`, then one
 * value holding every job, each starting with its id's length as uint16 BE and the id).
 */
export function addCallIds(argv: readonly unknown[]): string[] {
  const first = String(argv[0]);
  const ids: string[] = [];
  if (!first.startsWith('P')) {
    for (let i = 0; i < Number(first); i++) ids.push(String(argv[4 + 5 * i]));
    return ids;
  }
  const packed = argv[4] as Buffer;
  let at = 0;
  for (let i = 0; i < Number(first.slice(1)); i++) {
    const idLength = packed.readUInt16BE(at);
    ids.push(packed.toString('utf8', at + 2, at + 2 + idLength));
    // Past the id: mode (2), when (6), then the record's length (uint32) and the record.
    const recordAt = at + 2 + idLength + 8;
    at = recordAt + 4 + packed.readUInt32BE(recordAt);
  }
  return ids;
}
