// The console's build: one hashed entry chunk and one stylesheet under dist/console/assets/, served
// by the service itself (src/http/console.ts). `npx vite` in this folder is a development server
// that forwards the API paths to a service on :3000.
import { defineConfig } from 'vite';

const API = /^\/(auth|projects|health|openapi\.json|docs|[a-z2-7]{16})(\/|$)/.source;

export default defineConfig({
  base: '/console/',
  // JSX of Preact (its automatic runtime), compiled by Vite's own transformer: no plugin needed
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: '../dist/console',
    emptyOutDir: true,
    target: 'es2022',
    // no inline scripts or styles (the service's CSP allows only files of its own)
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    reportCompressedSize: false,
  },
  server: { proxy: { [`^${API}`]: 'http://localhost:3000' } },
});
