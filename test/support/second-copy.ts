/**
 * A second module instance of the package, as an application gets when a dependency bundles its
 * own copy of delayq: the sources copied to a temporary directory (with this repository's
 * node_modules linked beside them) and imported from there, so every class in it is distinct from
 * the one the tests import from src/ (`instanceof` across the two is false).
 */
import { cpSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

type Package = typeof import('../../src/index.js');

/** The second copy's exports, and a function that removes its files. */
export async function loadSecondCopy(): Promise<{ delayq: Package; remove(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'delayq-second-copy-'));
  const remove = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    cpSync(fileURLToPath(new URL('../../src/', import.meta.url)), join(dir, 'src'), { recursive: true });
    symlinkSync(fileURLToPath(new URL('../../node_modules', import.meta.url)), join(dir, 'node_modules'));
    const delayq = (await import(pathToFileURL(join(dir, 'src/index.ts')).href)) as Package;
    return { delayq, remove };
  } catch (err) {
    remove();
    throw err;
  }
}
