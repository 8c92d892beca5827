#!/usr/bin/env -S node --max-semi-space-size=32
// Runs the TypeScript CLI through tsx so that the package needs no build step, with the
// Node flags of src/cli/node-flags.ts.
import { register } from 'tsx/esm/api';
register();
await import('../src/cli/main.ts');
