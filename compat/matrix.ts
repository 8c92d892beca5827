import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The client x scenario results of a compat run, one table per target. Each target's suite
// runs in a process of its own and leaves its part in PARTS_DIR; the run's end joins them.

export type Outcome = 'PASS' | 'FAIL' | 'not yet' | 'n/a' | 'SKIP';

const PARTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '.cache', 'compat-matrix-parts');

/** One target's results, as its suite leaves them. */
export interface MatrixPart {
  readonly targets: readonly string[];
  readonly clients: readonly string[];
  readonly scenarios: readonly string[];
  readonly cells: readonly (readonly [string, Outcome])[];
  readonly notes: readonly string[];
}

export function clearMatrixParts(): void {
  rmSync(PARTS_DIR, { recursive: true, force: true });
}

export function writeMatrixPart(key: string, matrix: Matrix): void {
  mkdirSync(PARTS_DIR, { recursive: true });
  writeFileSync(join(PARTS_DIR, `${key}.json`), JSON.stringify(matrix.part()));
}

/** The parts left by this run's suites, in the order of `keys`, by key. */
export function readMatrixParts(keys: readonly string[]): Map<string, MatrixPart> {
  const present = existsSync(PARTS_DIR) ? new Set(readdirSync(PARTS_DIR)) : new Set<string>();
  const parts = new Map<string, MatrixPart>();
  for (const key of keys) {
    if (present.has(`${key}.json`)) parts.set(key, JSON.parse(readFileSync(join(PARTS_DIR, `${key}.json`), 'utf8')) as MatrixPart);
  }
  return parts;
}

export class Matrix {
  private readonly cells = new Map<string, Outcome>();
  private readonly notes: string[] = [];

  constructor(
    private readonly targets: readonly string[],
    private readonly clients: readonly string[],
    private readonly scenarios: readonly string[],
  ) {}

  set(target: string, client: string, scenario: string, outcome: Outcome): void {
    this.cells.set(`${target}\0${client}\0${scenario}`, outcome);
  }

  /** One matrix of the parts' targets, in their order; clients and scenarios as the first part lists them. */
  static join(parts: readonly MatrixPart[]): Matrix {
    const matrix = new Matrix(
      parts.flatMap((p) => p.targets),
      parts[0]?.clients ?? [],
      parts[0]?.scenarios ?? [],
    );
    for (const p of parts) {
      for (const [key, outcome] of p.cells) matrix.cells.set(key, outcome);
      for (const note of p.notes) matrix.noteOnce(note);
    }
    return matrix;
  }

  part(): MatrixPart {
    return { targets: this.targets, clients: this.clients, scenarios: this.scenarios, cells: [...this.cells], notes: this.notes };
  }

  note(text: string): void {
    this.notes.push(text);
  }

  noteOnce(text: string): void {
    if (!this.notes.includes(text)) this.notes.push(text);
  }

  render(): string {
    const lines: string[] = [];
    for (const target of this.targets) {
      lines.push(`### Against ${target}`, '');
      lines.push(`| scenario | ${this.clients.join(' | ')} |`);
      lines.push(`| --- | ${this.clients.map(() => '---').join(' | ')} |`);
      for (const scenario of this.scenarios) {
        const row = this.clients.map((c) => this.cells.get(`${target}\0${c}\0${scenario}`) ?? 'FAIL');
        lines.push(`| ${scenario} | ${row.join(' | ')} |`);
      }
      lines.push('');
    }
    lines.push(
      'PASS: the scenario passed with that client. FAIL: it failed (or did not run to the end). ' +
        'not yet: it needs a capability Sluice has not landed (compat/capabilities.ts). ' +
        'n/a: the client has no way to express it. SKIP: the client or broker is not installed here.',
    );
    for (const note of this.notes) lines.push('', note);
    return `${lines.join('\n')}\n`;
  }

  write(path: string, header: string): void {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${header}\n\n${this.render()}`);
  }
}
