// The Pixel Streaming data-channel protocol as the UE side speaks it (design/pixel-streaming.md §4):
// message tables with the default IDs, the 255 "Protocol" announcement, UE→browser text messages
// (UTF-16LE, no length prefix) and parsing of browser→UE messages into typed values.

export type FieldType = 'uint8' | 'uint16' | 'int16' | 'float' | 'double' | 'string';

interface MessageDefinition {
  readonly id: number;
  readonly structure: readonly FieldType[];
}

const TOUCH: readonly FieldType[] = ['uint8', 'uint16', 'uint16', 'uint8', 'uint8', 'uint8'];
const MOUSE_BUTTON: readonly FieldType[] = ['uint8', 'uint16', 'uint16'];
const GAMEPAD_BUTTON: readonly FieldType[] = ['uint8', 'uint8', 'uint8'];

/** Browser → UE messages and their default IDs and field layouts. */
export const TO_STREAMER = {
  IFrameRequest: { id: 0, structure: [] },
  RequestQualityControl: { id: 1, structure: [] },
  FpsRequest: { id: 2, structure: [] },
  AverageBitrateRequest: { id: 3, structure: [] },
  StartStreaming: { id: 4, structure: [] },
  StopStreaming: { id: 5, structure: [] },
  LatencyTest: { id: 6, structure: ['string'] },
  RequestInitialSettings: { id: 7, structure: [] },
  TestEcho: { id: 8, structure: ['string'] },
  UIInteraction: { id: 50, structure: ['string'] },
  Command: { id: 51, structure: ['string'] },
  TextboxEntry: { id: 52, structure: ['string'] },
  KeyDown: { id: 60, structure: ['uint8', 'uint8'] },
  KeyUp: { id: 61, structure: ['uint8'] },
  KeyPress: { id: 62, structure: ['uint16'] },
  MouseEnter: { id: 70, structure: [] },
  MouseLeave: { id: 71, structure: [] },
  MouseDown: { id: 72, structure: MOUSE_BUTTON },
  MouseUp: { id: 73, structure: MOUSE_BUTTON },
  MouseMove: { id: 74, structure: ['uint16', 'uint16', 'int16', 'int16'] },
  MouseWheel: { id: 75, structure: ['int16', 'uint16', 'uint16'] },
  MouseDouble: { id: 76, structure: MOUSE_BUTTON },
  TouchStart: { id: 80, structure: TOUCH },
  TouchEnd: { id: 81, structure: TOUCH },
  TouchMove: { id: 82, structure: TOUCH },
  GamepadButtonPressed: { id: 90, structure: GAMEPAD_BUTTON },
  GamepadButtonReleased: { id: 91, structure: GAMEPAD_BUTTON },
  GamepadAnalog: { id: 92, structure: ['uint8', 'uint8', 'double'] },
  GamepadConnected: { id: 93, structure: [] },
  GamepadDisconnected: { id: 94, structure: ['uint8'] },
} as const satisfies Record<string, MessageDefinition>;

/** UE → browser messages and their default IDs. */
export const FROM_STREAMER = {
  QualityControlOwnership: { id: 0, structure: ['uint8'] },
  Response: { id: 1, structure: ['string'] },
  Command: { id: 2, structure: ['string'] },
  FreezeFrame: { id: 3, structure: [] },
  UnfreezeFrame: { id: 4, structure: [] },
  VideoEncoderAvgQP: { id: 5, structure: ['string'] },
  LatencyTest: { id: 6, structure: ['string'] },
  InitialSettings: { id: 7, structure: ['string'] },
  FileExtension: { id: 8, structure: [] },
  FileMimeType: { id: 9, structure: [] },
  FileContents: { id: 10, structure: [] },
  TestEcho: { id: 11, structure: ['string'] },
  InputControlOwnership: { id: 12, structure: ['uint8'] },
  GamepadResponse: { id: 13, structure: ['string'] },
  Protocol: { id: 255, structure: ['string'] },
} as const satisfies Record<string, MessageDefinition>;

export const MessageDirection = { ToStreamer: 0, FromStreamer: 1 } as const;

/**
 * The JSON UE sends as message 255 when the channel opens, once per direction:
 * `{"Direction":0,"KeyDown":{"id":60,"structure":["uint8","uint8"]},…}`.
 */
export function protocolAnnouncement(direction: (typeof MessageDirection)[keyof typeof MessageDirection]): string {
  const table: Record<string, MessageDefinition> = direction === MessageDirection.ToStreamer ? TO_STREAMER : FROM_STREAMER;
  const body: Record<string, unknown> = { Direction: direction };
  for (const [name, def] of Object.entries(table)) body[name] = { id: def.id, structure: [...def.structure] };
  return JSON.stringify(body);
}

/** A UE → browser text message: the id byte, then the text as UTF-16LE with no length prefix. */
export function encodeTextMessage(id: number, text: string): Buffer {
  return Buffer.concat([Buffer.from([id]), Buffer.from(text, 'utf16le')]);
}

/** A UE → browser message with a single uint8 field (QualityControlOwnership, InputControlOwnership). */
export function encodeUint8Message(id: number, value: number): Buffer {
  return Buffer.from([id, value & 0xff]);
}

export interface TouchPoint {
  readonly x: number;
  readonly y: number;
  readonly finger: number;
  readonly force: number;
  readonly inRange: number;
}

/** A parsed browser → UE message. Coordinates stay quantised (u16: fraction × 65536). */
export type ToStreamerMessage =
  | { readonly type: 'IFrameRequest' | 'RequestQualityControl' | 'FpsRequest' | 'AverageBitrateRequest' }
  | { readonly type: 'StartStreaming' | 'StopStreaming' | 'RequestInitialSettings' }
  | { readonly type: 'MouseEnter' | 'MouseLeave' | 'GamepadConnected' }
  | { readonly type: 'LatencyTest' | 'TestEcho' | 'UIInteraction' | 'Command' | 'TextboxEntry'; readonly text: string }
  | { readonly type: 'KeyDown'; readonly keyCode: number; readonly isRepeat: number }
  | { readonly type: 'KeyUp'; readonly keyCode: number }
  | { readonly type: 'KeyPress'; readonly charCode: number }
  | { readonly type: 'MouseDown' | 'MouseUp' | 'MouseDouble'; readonly button: number; readonly x: number; readonly y: number }
  | { readonly type: 'MouseMove'; readonly x: number; readonly y: number; readonly deltaX: number; readonly deltaY: number }
  | { readonly type: 'MouseWheel'; readonly delta: number; readonly x: number; readonly y: number }
  | { readonly type: 'TouchStart' | 'TouchEnd' | 'TouchMove'; readonly touches: readonly TouchPoint[] }
  | { readonly type: 'GamepadButtonPressed' | 'GamepadButtonReleased'; readonly controller: number; readonly button: number; readonly isRepeat: number }
  | { readonly type: 'GamepadAnalog'; readonly controller: number; readonly axis: number; readonly value: number }
  | { readonly type: 'GamepadDisconnected'; readonly controller: number }
  | { readonly type: 'Unknown'; readonly id: number; readonly length: number };

export class MalformedMessageError extends Error {
  override readonly name = 'MalformedMessageError';
}

/** Little-endian cursor over one message; throws MalformedMessageError when a field runs past the end. */
class FieldReader {
  private offset = 1;
  constructor(private readonly bytes: Buffer, private readonly name: string) {}

  private need(size: number): void {
    if (this.offset + size > this.bytes.length) {
      throw new MalformedMessageError(`${this.name} is ${this.bytes.length} bytes; a field at offset ${this.offset} needs ${size} more`);
    }
  }

  u8(): number {
    this.need(1);
    return this.bytes.readUInt8(this.offset++);
  }

  u16(): number {
    this.need(2);
    const value = this.bytes.readUInt16LE(this.offset);
    this.offset += 2;
    return value;
  }

  i16(): number {
    this.need(2);
    const value = this.bytes.readInt16LE(this.offset);
    this.offset += 2;
    return value;
  }

  f64(): number {
    this.need(8);
    const value = this.bytes.readDoubleLE(this.offset);
    this.offset += 8;
    return value;
  }

  /** u16 count of UTF-16 code units, then the text in UTF-16LE. */
  string(): string {
    const units = this.u16();
    this.need(units * 2);
    const text = this.bytes.toString('utf16le', this.offset, this.offset + units * 2);
    this.offset += units * 2;
    return text;
  }
}

const NAME_BY_ID = new Map<number, keyof typeof TO_STREAMER>(
  Object.entries(TO_STREAMER).map(([name, def]) => [def.id, name as keyof typeof TO_STREAMER]),
);

/** Parses one browser → UE message. Unknown ids parse as `Unknown`; truncated ones throw. */
export function parseToStreamerMessage(bytes: Buffer): ToStreamerMessage {
  const id = bytes[0];
  if (id === undefined) throw new MalformedMessageError('empty message');
  const type = NAME_BY_ID.get(id);
  if (type === undefined) return { type: 'Unknown', id, length: bytes.length };
  const r = new FieldReader(bytes, type);
  switch (type) {
    case 'IFrameRequest':
    case 'RequestQualityControl':
    case 'FpsRequest':
    case 'AverageBitrateRequest':
    case 'StartStreaming':
    case 'StopStreaming':
    case 'RequestInitialSettings':
    case 'MouseEnter':
    case 'MouseLeave':
    case 'GamepadConnected':
      return { type };
    case 'LatencyTest':
    case 'TestEcho':
    case 'UIInteraction':
    case 'Command':
    case 'TextboxEntry':
      return { type, text: r.string() };
    case 'KeyDown':
      return { type, keyCode: r.u8(), isRepeat: r.u8() };
    case 'KeyUp':
      return { type, keyCode: r.u8() };
    case 'KeyPress':
      return { type, charCode: r.u16() };
    case 'MouseDown':
    case 'MouseUp':
    case 'MouseDouble':
      return { type, button: r.u8(), x: r.u16(), y: r.u16() };
    case 'MouseMove':
      return { type, x: r.u16(), y: r.u16(), deltaX: r.i16(), deltaY: r.i16() };
    case 'MouseWheel':
      return { type, delta: r.i16(), x: r.u16(), y: r.u16() };
    case 'TouchStart':
    case 'TouchEnd':
    case 'TouchMove': {
      const count = r.u8();
      const touches: TouchPoint[] = [];
      for (let i = 0; i < count; i++) {
        touches.push({ x: r.u16(), y: r.u16(), finger: r.u8(), force: r.u8(), inRange: r.u8() });
      }
      return { type, touches };
    }
    case 'GamepadButtonPressed':
    case 'GamepadButtonReleased':
      return { type, controller: r.u8(), button: r.u8(), isRepeat: r.u8() };
    case 'GamepadAnalog':
      return { type, controller: r.u8(), axis: r.u8(), value: r.f64() };
    case 'GamepadDisconnected':
      return { type, controller: r.u8() };
    default: {
      const unreachable: never = type;
      throw new Error(`unhandled message ${String(unreachable)}`);
    }
  }
}

/** Quantised u16 coordinate → fraction of the video rectangle, 4 decimals ("0.5000"). */
function coordinate(value: number): string {
  return (value / 65536).toFixed(4);
}

/** Quantised i16 delta → fraction of the video rectangle, 4 decimals. */
function delta(value: number): string {
  return (value / 32767).toFixed(4);
}

/** Control characters escaped as \\uXXXX so one message stays one log line; everything else verbatim. */
function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The log line text for an input message (`KeyDown keyCode=65 repeat=0`,
 * `MouseDown button=0 x=0.5000 y=0.5000`, `UIInteraction {"a":1}`), one entry per touch point;
 * an empty array for control messages, which are not input.
 */
export function describeInput(message: ToStreamerMessage): string[] {
  switch (message.type) {
    case 'KeyDown':
      return [`KeyDown keyCode=${message.keyCode} repeat=${message.isRepeat}`];
    case 'KeyUp':
      return [`KeyUp keyCode=${message.keyCode}`];
    case 'KeyPress':
      return [`KeyPress charCode=${message.charCode}`];
    case 'MouseEnter':
    case 'MouseLeave':
    case 'GamepadConnected':
      return [message.type];
    case 'MouseDown':
    case 'MouseUp':
    case 'MouseDouble':
      return [`${message.type} button=${message.button} x=${coordinate(message.x)} y=${coordinate(message.y)}`];
    case 'MouseMove':
      return [`MouseMove x=${coordinate(message.x)} y=${coordinate(message.y)} dx=${delta(message.deltaX)} dy=${delta(message.deltaY)}`];
    case 'MouseWheel':
      return [`MouseWheel delta=${message.delta} x=${coordinate(message.x)} y=${coordinate(message.y)}`];
    case 'TouchStart':
    case 'TouchEnd':
    case 'TouchMove':
      return message.touches.map(
        (t) => `${message.type} finger=${t.finger} x=${coordinate(t.x)} y=${coordinate(t.y)} force=${(t.force / 255).toFixed(4)} inRange=${t.inRange}`,
      );
    case 'UIInteraction':
    case 'Command':
    case 'TextboxEntry':
      return [`${message.type} ${printable(message.text)}`];
    case 'GamepadButtonPressed':
    case 'GamepadButtonReleased':
      return [`${message.type} controller=${message.controller} button=${message.button} repeat=${message.isRepeat}`];
    case 'GamepadAnalog':
      return [`GamepadAnalog controller=${message.controller} axis=${message.axis} value=${message.value.toFixed(4)}`];
    case 'GamepadDisconnected':
      return [`GamepadDisconnected controller=${message.controller}`];
    case 'IFrameRequest':
    case 'RequestQualityControl':
    case 'FpsRequest':
    case 'AverageBitrateRequest':
    case 'StartStreaming':
    case 'StopStreaming':
    case 'RequestInitialSettings':
    case 'LatencyTest':
    case 'TestEcho':
    case 'Unknown':
      return [];
    default: {
      const unreachable: never = message;
      throw new Error(`unhandled message ${JSON.stringify(unreachable)}`);
    }
  }
}

/** Browser → UE encoders, the inverse of parseToStreamerMessage; used by test players. */
export const encodeToStreamer = {
  empty(id: number): Buffer {
    return Buffer.from([id]);
  },
  /** id, u16 UTF-16 code-unit count, UTF-16LE text (e.g. UIInteraction, Command). */
  string(id: number, text: string): Buffer {
    const header = Buffer.alloc(3);
    header.writeUInt8(id, 0);
    header.writeUInt16LE(text.length, 1);
    return Buffer.concat([header, Buffer.from(text, 'utf16le')]);
  },
  keyDown(keyCode: number, isRepeat = false): Buffer {
    return Buffer.from([TO_STREAMER.KeyDown.id, keyCode, isRepeat ? 1 : 0]);
  },
  keyUp(keyCode: number): Buffer {
    return Buffer.from([TO_STREAMER.KeyUp.id, keyCode]);
  },
  /** x, y as fractions of the video rectangle (0..1). */
  mouseButton(id: 72 | 73 | 76, button: number, x: number, y: number): Buffer {
    const bytes = Buffer.alloc(6);
    bytes.writeUInt8(id, 0);
    bytes.writeUInt8(button, 1);
    bytes.writeUInt16LE(Math.min(65535, Math.round(x * 65536)), 2);
    bytes.writeUInt16LE(Math.min(65535, Math.round(y * 65536)), 4);
    return bytes;
  },
};

export interface InitialSettingsValues {
  readonly allowPixelStreamingCommands: boolean;
  /** Frames per second and bits per second, as on the command line. */
  readonly fps: number;
  readonly startBitrate: number;
  readonly minBitrate: number;
  readonly maxBitrate: number;
}

/** The InitialSettings (7) JSON: the sections and names the frontend reads (PixelStreaming, Encoder, WebRTC, ConfigOptions). */
export function initialSettingsJson(values: InitialSettingsValues): string {
  return JSON.stringify({
    PixelStreaming: { AllowPixelStreamingCommands: values.allowPixelStreamingCommands, DisableLatencyTest: false },
    Encoder: { TargetBitrate: -1, MaxBitrate: values.maxBitrate, MinQP: -1, MaxQP: -1, RateControl: 'CBR', FillerData: 0, MultiPass: 'FULL' },
    WebRTC: {
      DegradationPref: 'MAINTAIN_FRAMERATE',
      FPS: values.fps,
      StartBitrate: values.startBitrate,
      MinBitrate: values.minBitrate,
      MaxBitrate: values.maxBitrate,
      LowQP: 25,
      HighQP: 37,
    },
    ConfigOptions: {},
  });
}
