/** A thrown value as an Error: handlers (and listeners) may throw anything. */
export function toError(err: unknown): Error {
  if (err instanceof Error) return err;
  return new Error(typeof err === 'string' ? err : `non-Error thrown: ${JSON.stringify(err)}`);
}
