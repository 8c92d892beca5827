import type { DriverFactory } from '../driver.ts';
import { java } from './java.ts';
import { kafkaCli } from './kafka-cli.ts';
import { kafkajs } from './kafkajs.ts';
import { kcat } from './kcat.ts';
import { platformatic } from './platformatic.ts';
import { confluentKafkaPython, kafkaPython } from './python.ts';

// The clients in the order of the matrix columns.
export const CLIENTS: readonly DriverFactory[] = [kafkajs, platformatic, kcat, confluentKafkaPython, kafkaPython, java, kafkaCli];
