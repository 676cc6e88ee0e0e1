import { defineConfig } from 'tsdown';

// What the package ships: ESM and CJS for any runtime (Node, browsers, Deno, Bun), and one declaration
// file per format, its dependencies left to the app's install.
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  platform: 'neutral',
  target: 'es2022',
  tsconfig: 'tsconfig.build.json',
  dts: true,
  // One file per module: a bundler drops what an app does not import (the webhook verifier and its
  // dependencies, the client it does not use), as the package has no side effects.
  unbundle: true,
  clean: true,
});
