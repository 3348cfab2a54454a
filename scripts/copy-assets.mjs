// After tsc: ship what the compiled code reads at run time beside it.
// - The Lua scripts, with their includes expanded, so dist/scripts/<name>.lua is the exact source
//   delayq runs: a producer in another language can EVAL the same file (see docs/PROTOCOL.md).
// - The Redis function library built from the same sources (dist/scripts keeps no includes to
//   build it from at run time).
// - The dashboard's static page script and style.
// - The protobuf envelope's .proto, for producers in other languages.
import { cpSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { URL, fileURLToPath } from 'node:url';
import { buildLibrary, LIBRARY_FILE } from '../dist/redis/function-library.js';
import { expandLua } from '../dist/redis/lua-source.js';

const source = fileURLToPath(new URL('../src/scripts/', import.meta.url));
const target = fileURLToPath(new URL('../dist/scripts/', import.meta.url));
mkdirSync(target, { recursive: true });
for (const file of readdirSync(source)) {
  if (file.endsWith('.lua')) writeFileSync(`${target}${file}`, expandLua(source, file));
}
writeFileSync(`${target}${LIBRARY_FILE}`, buildLibrary(source).source);

cpSync(
  new URL('../src/dashboard/static/', import.meta.url),
  new URL('../dist/dashboard/static/', import.meta.url),
  {
    recursive: true,
  },
);

cpSync(
  new URL('../src/codec/envelope.proto', import.meta.url),
  new URL('../dist/codec/envelope.proto', import.meta.url),
);
