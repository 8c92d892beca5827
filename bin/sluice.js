#!/usr/bin/env -S node --max-semi-space-size=32 --initial-old-space-size=256
// The `sluice` command: the compiled CLI in dist/ (`npm run build` writes it; the published
// package ships it), run with the Node flags of src/cli/node-flags.ts.
await import('../dist/src/cli/main.js');
