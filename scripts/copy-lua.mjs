// The Lua scripts are read at run time from dist/scripts, beside the compiled code: copy them there.
import { cpSync } from 'node:fs';
import { URL } from 'node:url';

cpSync(new URL('../src/scripts/', import.meta.url), new URL('../dist/scripts/', import.meta.url), {
  recursive: true,
  filter: (source) => !source.endsWith('.ts'),
});
