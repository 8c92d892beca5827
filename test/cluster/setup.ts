/**
 * What a fault run can use on this machine: the clients that are installed and the fault
 * kinds it can inject. Locally a missing piece is left out with a loud warning; under CI
 * (CI=true, where scripts/install-test-clients.sh installs everything) it is an error.
 */
import { javaUnavailable } from '../../compat/clients/java.ts';
import { pythonUnavailable } from './clients.ts';
import { eiofsBinary } from './disks.ts';
import { FAULT_KINDS, type FaultKind } from './nemesis.ts';
import type { ClientName } from './soak.ts';

export interface FaultSetup {
  readonly clients: ClientName[];
  readonly kinds: FaultKind[];
  readonly eiofs: string | null;
  /** What is missing, each with how to install it. */
  readonly missing: string[];
}

export function faultSetup(): FaultSetup {
  const missing: string[] = [];
  const clients: ClientName[] = ['kafkajs'];
  const python = pythonUnavailable();
  if (python === null) clients.push('librdkafka');
  else missing.push(`librdkafka: ${python} (apt-get install python3-confluent-kafka: scripts/install-test-clients.sh)`);
  const java = javaUnavailable();
  if (java === null) clients.push('java');
  else missing.push(`the Java client: ${java} (scripts/install-test-clients.sh)`);
  const eiofs = eiofsBinary();
  if (eiofs === null)
    missing.push('the EIO filesystem: scripts/faults/eiofs/eiofs is not built and scripts/faults/eiofs/build.sh cannot build it');
  const kinds = FAULT_KINDS.filter((k) => k !== 'disk-eio' || eiofs !== null);
  return { clients, kinds, eiofs, missing };
}

/** Prints each missing piece loudly; throws under CI. */
export function reportMissing(setup: FaultSetup, print: (line: string) => void): void {
  if (setup.missing.length === 0) return;
  if (process.env.CI === 'true') throw new Error(`the fault suite needs: ${setup.missing.join('; ')}`);
  for (const m of setup.missing) print(`\n    !!!!! MISSING, left out of the fault run: ${m} !!!!!\n`);
}
