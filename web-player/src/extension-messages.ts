// Pixelfleet's extension messages on the player signalling socket (type starts with `pixelfleet`):
// the types the control plane sends, and the one parser the page uses at the edge.

/** First message on every player socket, before `config`. */
export interface PixelfleetSessionMessage {
  readonly type: 'pixelfleetSession';
  readonly sessionId: string;
  /** Bearer for the telemetry endpoint (header `x-viewer-token`, or `viewerToken` in the body). */
  readonly viewerToken: string;
  /** Absolute URL, or a path resolved against the page's address. */
  readonly telemetryUrl: string;
  /** How long a streaming session waits for this page to resume after its socket drops (0: it does not). */
  readonly resumeWindowSeconds: number;
}

/** Queue position while the session waits; sent again whenever it changes. */
export interface PixelfleetQueueMessage {
  readonly type: 'pixelfleetQueue';
  /** 1 = next in line. */
  readonly position: number;
  /** Sessions waiting for this project, including this one. */
  readonly queueLength: number;
  /**
   * True while no streaming server of the region takes sessions (a short outage: the line keeps
   * its places until the server is back or its grace ends with 4001). Absent from older servers: false.
   */
  readonly waitingForServer: boolean;
  /**
   * Seconds until this viewer's stream likely starts, from the region's recent sessions (their
   * slot lifetimes and start-ups) and the slots serving it; absent until the server has data.
   */
  readonly estimatedWaitSeconds?: number;
}

/** Statuses the gateway announces to the page. */
export const PIXELFLEET_STATUSES = ['starting'] as const;
export type PixelfleetStatus = (typeof PIXELFLEET_STATUSES)[number];

/** A streaming server has been assigned; `config` follows. */
export interface PixelfleetStatusMessage {
  readonly type: 'pixelfleetStatus';
  readonly status: PixelfleetStatus;
}

export type PixelfleetExtensionMessage = PixelfleetSessionMessage | PixelfleetQueueMessage | PixelfleetStatusMessage;

/** Every extension message type, in the order a session first meets them. */
export const PIXELFLEET_MESSAGE_TYPES = ['pixelfleetSession', 'pixelfleetQueue', 'pixelfleetStatus'] as const satisfies readonly PixelfleetExtensionMessage['type'][];

/** An extension message that does not match its type's shape. */
export class ExtensionMessageError extends Error {
  override readonly name = 'ExtensionMessageError';
}

function field(record: Record<string, unknown>, key: string): unknown {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined;
}

function text(record: Record<string, unknown>, key: string, type: string): string {
  const value = field(record, key);
  if (typeof value !== 'string' || value === '') {
    throw new ExtensionMessageError(`${type}.${key} must be a non-empty string`);
  }
  return value;
}

function count(record: Record<string, unknown>, key: string, type: string, min: number): number {
  const value = field(record, key);
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw new ExtensionMessageError(`${type}.${key} must be an integer >= ${min}`);
  }
  return value;
}

/** Parse one extension message (already JSON-decoded). Throws ExtensionMessageError on a bad shape. */
export function parseExtensionMessage(value: unknown): PixelfleetExtensionMessage {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ExtensionMessageError('extension message must be an object');
  }
  const record = value as Record<string, unknown>;
  const type = field(record, 'type');
  switch (type) {
    case 'pixelfleetSession':
      return {
        type,
        sessionId: text(record, 'sessionId', type),
        viewerToken: text(record, 'viewerToken', type),
        telemetryUrl: text(record, 'telemetryUrl', type),
        resumeWindowSeconds: count(record, 'resumeWindowSeconds', type, 0),
      };
    case 'pixelfleetQueue': {
      const position = count(record, 'position', type, 1);
      const queueLength = count(record, 'queueLength', type, 0);
      const waiting = field(record, 'waitingForServer');
      if (waiting !== undefined && typeof waiting !== 'boolean') throw new ExtensionMessageError(`${type}.waitingForServer must be a boolean`);
      const estimate = field(record, 'estimatedWaitSeconds') === undefined ? undefined : count(record, 'estimatedWaitSeconds', type, 0);
      return { type, position, queueLength: Math.max(queueLength, position), waitingForServer: waiting === true, ...(estimate === undefined ? {} : { estimatedWaitSeconds: estimate }) };
    }
    case 'pixelfleetStatus': {
      const status = field(record, 'status');
      if (!PIXELFLEET_STATUSES.includes(status as PixelfleetStatus)) {
        throw new ExtensionMessageError(`pixelfleetStatus.status must be one of ${PIXELFLEET_STATUSES.join(', ')}`);
      }
      return { type, status: status as PixelfleetStatus };
    }
    default:
      throw new ExtensionMessageError(`unknown extension message type ${JSON.stringify(type)}`);
  }
}
