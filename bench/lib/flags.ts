/** `--name=N` of the probe scripts (bench/*.ts run on their own): a whole number >= 1, or `fallback`. */
export function countFlag(name: string, fallback: number): number {
  const given = process.argv.find((a) => a.startsWith(`--${name}=`));
  const value = given === undefined ? fallback : Number(given.slice(name.length + 3));
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a whole number >= 1`);
  return value;
}
