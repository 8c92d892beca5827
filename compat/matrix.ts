import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

// The client x scenario results of a compat run, one table per target.

export type Outcome = 'PASS' | 'FAIL' | 'not yet' | 'n/a' | 'SKIP';

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
