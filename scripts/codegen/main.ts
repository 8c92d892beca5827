// Generates protocol/messages/** from Kafka's JSON message definitions.
// Run: npm run codegen
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generate, BANNER } from './emit.ts';
import { readSpec, specAvailable, specDir } from './spec.ts';

export { specAvailable, specDir } from './spec.ts';

/** protocol/messages of this repository. */
export function outputDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), '../../protocol/messages');
}

/** Generates every file from the spec at `spec`, keyed by path relative to protocol/messages. */
export function generateAll(spec = specDir()): Map<string, string> {
  return generate(readSpec(spec));
}

/** Lists generated files (those carrying the banner) under dir, relative to it. */
export function listGenerated(dir: string): string[] {
  const found: string[] = [];
  const walk = (sub: string) => {
    let entries: string[];
    try {
      entries = readdirSync(join(dir, sub));
    } catch {
      return;
    }
    for (const name of entries) {
      const rel = sub ? `${sub}/${name}` : name;
      if (statSync(join(dir, rel)).isDirectory()) walk(rel);
      else if (name.endsWith('.ts') && readFileSync(join(dir, rel), 'utf8').startsWith(BANNER)) found.push(rel);
    }
  };
  walk('');
  return found.sort();
}

/** Writes the generated files into dir, removing generated files the spec no longer produces. */
export function writeAll(files: Map<string, string>, dir: string): void {
  for (const stale of listGenerated(dir)) {
    if (!files.has(stale)) rmSync(join(dir, stale));
  }
  for (const [rel, text] of files) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (!specAvailable()) {
    console.error(`Kafka spec not found at ${specDir()}`);
    process.exit(1);
  }
  const files = generateAll();
  writeAll(files, outputDir());
  console.log(`wrote ${files.size} files to ${outputDir()}`);
}
