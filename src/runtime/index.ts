/**
 * The runtime a broker runs on: its clock and timers, its randomness, its network and its
 * disk. Production code reaches time, sockets and files only through these; `systemRuntime`
 * is the real one, and the tests and the simulation build a Broker on their own.
 */
import { nodeFileSystem, type FileSystem } from '../../storage/file-system.ts';
import { systemClock, type Clock } from './clock.ts';
import { systemNetwork, type Network } from './network.ts';
import { systemRandom, type Random } from './random.ts';

export type { Clock, TimerHandle } from './clock.ts';
export { repeat, schedule, systemClock, yieldToEventLoop } from './clock.ts';
export type { NetAddress, NetServer, NetSocket, Network } from './network.ts';
export { systemNetwork } from './network.ts';
export type { Random } from './random.ts';
export { systemRandom } from './random.ts';
// The file seam lives in storage (which cannot import src/); the runtime carries it.
export type { FileSystem } from '../../storage/file-system.ts';
export { nodeFileSystem } from '../../storage/file-system.ts';

export interface Runtime {
  readonly clock: Clock;
  readonly random: Random;
  readonly network: Network;
  readonly fileSystem: FileSystem;
}

export const systemRuntime: Runtime = {
  clock: systemClock,
  random: systemRandom,
  network: systemNetwork,
  fileSystem: nodeFileSystem,
};
