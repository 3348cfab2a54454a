/**
 * The dashboard's static files: its own scripts and styles (every file of src/dashboard/static,
 * copied beside the build; app.js is an ES module importing its parts by name) and uPlot's, read
 * once per process and cached by browsers for five minutes.
 */
import { readdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { HttpError, type Reply } from './exchange.js';

const require = createRequire(import.meta.url);
const staticDir = new URL('./static/', import.meta.url);
const TYPES: Record<string, string> = { js: 'text/javascript', css: 'text/css' };
const UPLOT: Record<string, string> = {
  'uPlot.iife.min.js': require.resolve('uplot/dist/uPlot.iife.min.js'),
  'uPlot.min.css': require.resolve('uplot/dist/uPlot.min.css'),
};
let ownFiles: Promise<ReadonlySet<string>> | undefined;
const assetCache = new Map<string, Promise<Buffer>>();

/** The file behind asset `name`, or undefined: only the static folder's own files and uPlot's. */
async function fileOf(name: string): Promise<string | undefined> {
  if (UPLOT[name]) return UPLOT[name];
  ownFiles ??= readdir(staticDir).then((names) => new Set(names));
  return (await ownFiles).has(name) ? fileURLToPath(new URL(name, staticDir)) : undefined;
}

/** The asset `name` (the path after /assets/); a 404 HttpError for any other name. */
export async function asset(name: string): Promise<Reply> {
  const type = TYPES[name.slice(name.lastIndexOf('.') + 1)];
  const file = type === undefined ? undefined : await fileOf(name);
  if (type === undefined || file === undefined) throw new HttpError(404, 'no such asset');
  let data = assetCache.get(name);
  if (!data) {
    data = readFile(file);
    assetCache.set(name, data);
    data.catch(() => assetCache.delete(name));
  }
  return {
    status: 200,
    headers: { 'content-type': `${type}; charset=utf-8`, 'cache-control': 'public, max-age=300' },
    body: await data,
  };
}
