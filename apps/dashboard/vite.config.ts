import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the CRM server under /admin; the server's Content-Security-Policy allows no inline script or style.
export default defineConfig({
  base: '/admin/',
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    target: 'es2022',
    // The polyfill would be an inline-free module too, but every browser we target has modulepreload.
    modulePreload: { polyfill: false },
    // Never inline assets as data: URLs into CSS/JS; keep everything a same-origin file.
    assetsInlineLimit: 0,
    reportCompressedSize: true,
  },
  server: {
    // `npm run dev -w @crm/dashboard` proxies the API to a CRM server running locally.
    proxy: {
      '/admin/trpc': 'http://127.0.0.1:3000',
      '/admin/auth': 'http://127.0.0.1:3000',
    },
  },
});
