/**
 * `--codec-module <file>`: codecs the CLI cannot know by name (protobuf, custom), loaded from a
 * module the user names. It exports a Codec as its default export, as `codec`, or an array of them
 * as `codecs`; each is found by the `name` it declares, which the queue's config records.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Codec } from '../codec/codec.js';
import { DelayqError } from '../errors.js';

/** How a CLI user gives a codec, for errors naming a codec the CLI lacks. */
export const CODEC_HINT =
  'pass --codec-module <file> whose default export is that codec (e.g. export default protobufCodec(MySchema))';

function isCodec(value: unknown): value is Codec {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Codec).name === 'string' &&
    typeof (value as Codec).encodePayload === 'function' &&
    typeof (value as Codec).decodePayload === 'function'
  );
}

/** The codecs `path` exports (none when `path` is undefined); a DelayqError (exit 1) when it cannot be used. */
export async function loadCodecModule(path: string | undefined): Promise<Codec[]> {
  if (path === undefined) return [];
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(resolve(path)).href)) as Record<string, unknown>;
  } catch (err) {
    throw new DelayqError(
      'DELAYQ_CODEC_MODULE',
      `--codec-module ${path} could not be loaded: ${(err as Error).message}`,
    );
  }
  const found = [
    exports['default'],
    exports['codec'],
    ...(Array.isArray(exports['codecs']) ? (exports['codecs'] as unknown[]) : []),
  ];
  const codecs = found.filter(isCodec);
  if (codecs.length === 0) {
    throw new DelayqError(
      'DELAYQ_CODEC_MODULE',
      `--codec-module ${path} exports no codec: export default (or export const codec) an object with name, encode and decode, or export const codecs = [...]`,
    );
  }
  return codecs;
}
