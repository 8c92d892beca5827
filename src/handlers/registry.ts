/**
 * The table of request handlers the network server dispatches to. Every API is registered in
 * one place, src/handlers/index.ts, which also says what services each handler family gets.
 *
 * A registration names the api key; the request and response types follow from it
 * (`ApiMessages` in protocol/messages/index.ts, generated from the Kafka spec):
 *
 * ```ts
 * registry.register(ApiKey.Produce, (ctx, request, version) => handleProduce(dataPath, request, version, ...));
 * // request: ProduceRequest; the handler returns a ProduceResponse or null
 * ```
 *
 * Contract:
 * - The server has already decoded the request with the codec at `version`; the handler returns
 *   the typed response (the server encodes it at the same version with the right response
 *   header) or `null` for "no response" (Produce with acks=0). The server keeps answering the
 *   connection's later requests in order either way.
 * - Handlers may be async; requests on one connection are handled strictly one after another,
 *   so a handler that waits (long-poll fetch, acks=all) holds back only its own connection.
 * - Per-partition/topic/group problems are answered with Kafka's error codes in the response.
 *   A handler that refuses the whole request throws a KafkaError (INVALID_REQUEST, ...); the
 *   server answers with the request's error response carrying that code, as Kafka's
 *   getErrorResponse does. Any other exception is a bug: logged with its stack and answered
 *   the same way with UNKNOWN_SERVER_ERROR; the connection and the broker serve on.
 * - ApiVersions advertises exactly what is registered for the listener's role (broker or
 *   controller), intersected with the codec's stable version range for that api key;
 *   requests for anything else close the connection as Kafka does.
 * - By default an API is registered on the listeners Kafka serves it on (the spec's
 *   "listeners"). An API served by different components per role (Fetch: data path on broker
 *   listeners, Raft on controller listeners) is registered once per role with
 *   `{ listeners: 'broker' }` / `{ listeners: 'controller' }`.
 * - Handlers are registered before the listeners open and never after.
 */
import { apis, type ApiKey, type ApiRequest, type ApiResponse } from '../../protocol/messages/index.ts';
import type { ListenerRole, RequestContext } from '../server/session.ts';

/** Which listeners an API is served on (Kafka's ApiMessageType listeners: broker, controller). */
export type ListenerScope = ListenerRole | 'both';

/** Returns the response to send, or null to send nothing (acks=0 Produce). */
export type Handler<Req, Res> = (ctx: RequestContext, request: Req, version: number) => Promise<Res | null> | Res | null;

/** The handler of api key `K`: its request and response types are those the codec has for `K`. */
export type ApiHandler<K extends ApiKey> = Handler<ApiRequest<K>, ApiResponse<K>>;

export interface RegisterOptions {
  /** Lowest version served; defaults to the codec's minimum. */
  minVersion?: number;
  /** Highest version served; defaults to the codec's maximum. */
  maxVersion?: number;
  /** Defaults to the listeners Kafka serves the API on (the spec's "listeners"). */
  listeners?: ListenerScope;
}

export interface RegisteredApi {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
  readonly listeners: ListenerScope;
  readonly handler: Handler<unknown, unknown>;
}

/**
 * What the codec offers for an api key, or undefined when it has none: the version range
 * (stable versions only) and the listeners Kafka serves it on.
 */
export type CodecRange = (apiKey: number) => { minVersion: number; maxVersion: number; listeners: ListenerScope } | undefined;

export class HandlerRegistry {
  /** One table per listener role: Fetch on a controller listener is Raft's, on a broker listener the data path's. */
  private readonly byRole = { broker: new Map<number, RegisteredApi>(), controller: new Map<number, RegisteredApi>() };

  constructor(private readonly rangeOf: CodecRange = codecRange) {}

  /**
   * Registers the handler for `apiKey` on the listeners of `options.listeners` (default: where
   * Kafka serves the API). The served range is the intersection of `options` with the codec's
   * range. Registering an api key twice for the same role, or outside the codec's range, is a
   * programming error and throws.
   */
  register<K extends ApiKey>(apiKey: K, handler: ApiHandler<K>, options: RegisterOptions = {}): void {
    const codec = this.rangeOf(apiKey);
    if (codec === undefined) throw new Error(`api key ${apiKey} is not in the codec`);
    const minVersion = Math.max(codec.minVersion, options.minVersion ?? codec.minVersion);
    const maxVersion = Math.min(codec.maxVersion, options.maxVersion ?? codec.maxVersion);
    if (minVersion > maxVersion) {
      throw new Error(
        `api key ${apiKey}: versions ${options.minVersion}..${options.maxVersion} outside the codec's ${codec.minVersion}..${codec.maxVersion}`,
      );
    }
    const listeners = options.listeners ?? codec.listeners;
    const roles = (['broker', 'controller'] as const).filter((role) => servedOn(listeners, role));
    for (const role of roles) {
      if (this.byRole[role].has(apiKey)) throw new Error(`api key ${apiKey} registered twice for ${role} listeners`);
    }
    // The one place the request type is erased: the server decodes with apis.get(apiKey), the
    // codec this handler's types come from.
    const api: RegisteredApi = { apiKey, minVersion, maxVersion, listeners, handler: handler as Handler<unknown, unknown> };
    for (const role of roles) this.byRole[role].set(apiKey, api);
  }

  /** The registration serving `apiKey` on a listener of `role`, if any. */
  lookup(apiKey: number, role: ListenerRole): RegisteredApi | undefined {
    return this.byRole[role].get(apiKey);
  }

  /** Every API served on a listener of `role`, sorted by api key (what ApiVersions advertises). */
  supported(role: ListenerRole): RegisteredApi[] {
    return [...this.byRole[role].values()].sort((a, b) => a.apiKey - b.apiKey);
  }
}

/** The CodecRange of the generated codec: Kafka does not advertise unstable latest versions. */
export function codecRange(apiKey: number): ReturnType<CodecRange> {
  const api = apis.get(apiKey);
  if (api === undefined) return undefined;
  const broker = api.listeners.includes('broker');
  const controller = api.listeners.includes('controller');
  return {
    minVersion: api.minVersion,
    maxVersion: api.latestVersionUnstable ? api.maxVersion - 1 : api.maxVersion,
    listeners: broker && controller ? 'both' : controller ? 'controller' : 'broker',
  };
}

function servedOn(scope: ListenerScope, role: ListenerRole): boolean {
  return scope === 'both' || scope === role;
}
