/**
 * Serves the web console: the page at `/` and its script, which the build compiles from
 * console/app.ts next to this module (dist/src/observability/console/app.js). A node run
 * from the TypeScript sources without a build has no script to serve, and says so.
 */
import { readFile } from 'node:fs/promises';
import type { HttpServer } from './http-server.ts';

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sluice console</title>
<style>
  :root { font-family: system-ui, sans-serif; color: #111827; background: #f9fafb; }
  body { margin: 0; }
  header { display: flex; align-items: baseline; gap: 2rem; padding: 0.75rem 1.5rem; background: #0f172a; color: #f8fafc; }
  header h1 { font-size: 1.1rem; margin: 0; letter-spacing: 0.05em; }
  nav a { color: #cbd5e1; margin-right: 1.25rem; text-decoration: none; }
  nav a.active { color: #fff; border-bottom: 2px solid #38bdf8; }
  main { padding: 1rem 1.5rem 3rem; max-width: 72rem; }
  h2 { margin-top: 0.5rem; }
  table { border-collapse: collapse; margin: 0.5rem 0 1rem; background: #fff; }
  th, td { border: 1px solid #e5e7eb; padding: 0.3rem 0.6rem; text-align: left; vertical-align: top; }
  th { background: #f1f5f9; font-weight: 600; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  code { white-space: pre-wrap; word-break: break-all; }
  form { background: #fff; border: 1px solid #e5e7eb; padding: 0.75rem 1rem; margin: 1rem 0; display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: end; }
  form h3 { width: 100%; margin: 0; font-size: 1rem; }
  label { display: flex; flex-direction: column; font-size: 0.85rem; gap: 0.2rem; }
  input, select, button { font: inherit; padding: 0.25rem 0.4rem; }
  button { background: #2563eb; color: #fff; border: 0; border-radius: 4px; padding: 0.35rem 0.9rem; cursor: pointer; }
  .status { width: 100%; margin: 0; font-size: 0.85rem; color: #166534; }
  .error { color: #b91c1c; }
  figure.chart { margin: 0.5rem 0 1rem; background: #fff; border: 1px solid #e5e7eb; padding: 0.5rem; max-width: 42rem; }
  figure.chart svg { width: 100%; height: auto; }
  figure.chart .grid { stroke: #e5e7eb; }
  figure.chart .axis { font-size: 11px; fill: #6b7280; }
  figcaption { font-size: 0.85rem; color: #374151; }
</style>
</head>
<body>
<header>
  <h1>SLUICE</h1>
  <nav><a href="#/" data-section="">Cluster</a><a href="#/topics" data-section="topics">Topics</a><a href="#/groups" data-section="groups">Consumer groups</a></nav>
</header>
<main id="main"><p>Loading…</p></main>
<script type="module" src="/console/app.js"></script>
</body>
</html>
`;

export function registerConsole(http: HttpServer): void {
  let script: Promise<string | null> | null = null;
  const loadScript = () => {
    script ??= readFile(new URL('./console/app.js', import.meta.url), 'utf8').catch(() => null);
    return script;
  };
  http.route('GET', '/', () => ({ status: 200, body: PAGE, contentType: 'text/html; charset=utf-8' }));
  http.route('GET', '/console/app.js', async () => {
    const code = await loadScript();
    if (code === null) {
      return { status: 503, body: 'The console is not built: run `npm run build`.', contentType: 'text/plain; charset=utf-8' };
    }
    return { status: 200, body: code, contentType: 'text/javascript; charset=utf-8' };
  });
}
