// Builds the app into dist/: the bundle and its stylesheet under content-hashed names in
// dist/assets/, and dist/index.html naming them. The output depends on the sources and the
// locked packages only, so a fresh build reproduces the committed dist/ byte for byte (the
// test command checks it, building with `--out <dir>` and comparing). `--tests` compiles
// test/*.test.ts for Node's test runner instead.
import * as esbuild from 'esbuild';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';

const flag = process.argv.indexOf('--out');
const out = resolve(flag > 0 ? process.argv[flag + 1] : new URL('dist', import.meta.url).pathname);
process.chdir(new URL('.', import.meta.url).pathname);

if (process.argv.includes('--tests')) {
  rmSync('.test-build', { recursive: true, force: true });
  await esbuild.build({
    entryPoints: readdirSync('test').filter((f) => f.endsWith('.test.ts')).map((f) => `test/${f}`),
    outdir: '.test-build',
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    // test/openapi runs the generator of src/openapi.d.ts from node_modules, TypeScript and all.
    external: ['openapi-typescript'],
    logLevel: 'warning',
  });
  process.exit(0);
}

const result = await esbuild.build({
  entryPoints: ['src/main.tsx', 'src/style.css'],
  outdir: 'out',
  entryNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2022',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  write: false,
  logLevel: 'warning',
});

rmSync(out, { recursive: true, force: true });
mkdirSync(`${out}/assets`, { recursive: true });
const names = {};
for (const file of result.outputFiles) {
  const name = basename(file.path);
  writeFileSync(`${out}/assets/${name}`, file.contents);
  names[name.endsWith('.css') ? 'css' : 'js'] = name;
}
writeFileSync(
  `${out}/index.html`,
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Knowledge</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/assets/${names.css}">
<script type="module" src="/assets/${names.js}"></script>
</head>
<body>
<div id="app"></div>
<noscript>This app needs JavaScript.</noscript>
</body>
</html>
`,
);
console.log(`${out}: index.html, assets/${names.js}, assets/${names.css}`);
