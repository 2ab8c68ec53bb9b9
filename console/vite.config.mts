/**
 * The console's build (`npm run build:console`): a single-page application
 * served by the service at /console from dist/console (src/http/console.ts).
 * JSX through Vite's own transform (oxc), with React's automatic runtime:
 * no plugin needed. No inline script or style in the output, so the page
 * runs under a CSP of script-src 'self' and style-src 'self'.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/console/',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'react' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // The polyfill would be an inline script; every browser the console is for has modulepreload.
    modulePreload: { polyfill: false },
    // Every asset a file of its own: a data: URL inlined in CSS or JS is still the build's, but simpler to reason about.
    assetsInlineLimit: 0,
    sourcemap: false,
  },
});
