// The data-channel protocol against design/pixel-streaming.md §4: announcement, byte examples,
// UTF-16LE text framing, parsing of every input message and the log lines they produce.
import { describe, expect, it } from 'vitest';
import {
  describeInput,
  encodeTextMessage,
  encodeToStreamer,
  FROM_STREAMER,
  initialSettingsJson,
  MalformedMessageError,
  MessageDirection,
  parseToStreamerMessage,
  protocolAnnouncement,
  TO_STREAMER,
} from './data-channel-protocol';

const hex = (text: string): Buffer => Buffer.from(text.replace(/\s+/g, ''), 'hex');

describe('protocol announcement (255)', () => {
  it('lists every ToStreamer message with the §4 default id and field types', () => {
    const json = JSON.parse(protocolAnnouncement(MessageDirection.ToStreamer)) as Record<string, unknown>;
    expect(json.Direction).toBe(0);
    expect(json.KeyDown).toEqual({ id: 60, structure: ['uint8', 'uint8'] });
    expect(json.MouseMove).toEqual({ id: 74, structure: ['uint16', 'uint16', 'int16', 'int16'] });
    expect(json.UIInteraction).toEqual({ id: 50, structure: ['string'] });
    expect(json.GamepadAnalog).toEqual({ id: 92, structure: ['uint8', 'uint8', 'double'] });
    const ids = Object.fromEntries(Object.entries(json).filter(([k]) => k !== 'Direction').map(([k, v]) => [k, (v as { id: number }).id]));
    expect(ids).toEqual({
      IFrameRequest: 0, RequestQualityControl: 1, FpsRequest: 2, AverageBitrateRequest: 3, StartStreaming: 4, StopStreaming: 5,
      LatencyTest: 6, RequestInitialSettings: 7, TestEcho: 8, UIInteraction: 50, Command: 51, TextboxEntry: 52,
      KeyDown: 60, KeyUp: 61, KeyPress: 62, MouseEnter: 70, MouseLeave: 71, MouseDown: 72, MouseUp: 73, MouseMove: 74,
      MouseWheel: 75, MouseDouble: 76, TouchStart: 80, TouchEnd: 81, TouchMove: 82, GamepadButtonPressed: 90,
      GamepadButtonReleased: 91, GamepadAnalog: 92, GamepadConnected: 93, GamepadDisconnected: 94,
    });
  });

  it('lists every FromStreamer message with its §4 id', () => {
    const json = JSON.parse(protocolAnnouncement(MessageDirection.FromStreamer)) as Record<string, { id: number } | number>;
    expect(json.Direction).toBe(1);
    const ids = Object.fromEntries(Object.entries(json).filter(([k]) => k !== 'Direction').map(([k, v]) => [k, (v as { id: number }).id]));
    expect(ids).toEqual({
      QualityControlOwnership: 0, Response: 1, Command: 2, FreezeFrame: 3, UnfreezeFrame: 4, VideoEncoderAvgQP: 5,
      LatencyTest: 6, InitialSettings: 7, FileExtension: 8, FileMimeType: 9, FileContents: 10, TestEcho: 11,
      InputControlOwnership: 12, GamepadResponse: 13, Protocol: 255,
    });
  });
});

describe('UE → browser text messages', () => {
  it('are the id byte then UTF-16LE with no length prefix', () => {
    expect(encodeTextMessage(FROM_STREAMER.Response.id, '{"a":1}')).toEqual(hex('01 7B00 2200 6100 2200 3A00 3100 7D00'));
    expect(encodeTextMessage(255, 'é€').subarray(1).toString('utf16le')).toBe('é€');
  });

  it('InitialSettings carries the command-line frame rate and bitrates in the sections the frontend reads', () => {
    const settings = JSON.parse(initialSettingsJson({ allowPixelStreamingCommands: true, fps: 30, startBitrate: 2e6, minBitrate: 5e5, maxBitrate: 8e6 })) as Record<string, Record<string, unknown>>;
    expect(Object.keys(settings)).toEqual(['PixelStreaming', 'Encoder', 'WebRTC', 'ConfigOptions']);
    expect(settings.PixelStreaming).toEqual({ AllowPixelStreamingCommands: true, DisableLatencyTest: false });
    expect(settings.WebRTC).toMatchObject({ FPS: 30, StartBitrate: 2e6, MinBitrate: 5e5, MaxBitrate: 8e6 });
  });
});

describe('browser → UE messages', () => {
  it('parses the §4 byte examples', () => {
    expect(parseToStreamerMessage(hex('3C 41 00'))).toEqual({ type: 'KeyDown', keyCode: 65, isRepeat: 0 });
    expect(parseToStreamerMessage(hex('48 00 0080 0080'))).toEqual({ type: 'MouseDown', button: 0, x: 32768, y: 32768 });
    expect(parseToStreamerMessage(hex('32 0700 7B00 2200 6100 2200 3A00 3100 7D00'))).toEqual({ type: 'UIInteraction', text: '{"a":1}' });
    expect(parseToStreamerMessage(hex('4A 0040 00C0 FF7F 0180'))).toEqual({ type: 'MouseMove', x: 16384, y: 49152, deltaX: 32767, deltaY: -32767 });
  });

  it('turns input into the documented log lines', () => {
    const line = (bytes: Buffer): string[] => describeInput(parseToStreamerMessage(bytes));
    expect(line(hex('3C 41 00'))).toEqual(['KeyDown keyCode=65 repeat=0']);
    expect(line(hex('3C 41 01'))).toEqual(['KeyDown keyCode=65 repeat=1']);
    expect(line(hex('3D 41'))).toEqual(['KeyUp keyCode=65']);
    expect(line(hex('3E 6100'))).toEqual(['KeyPress charCode=97']);
    expect(line(hex('48 00 0080 0080'))).toEqual(['MouseDown button=0 x=0.5000 y=0.5000']);
    expect(line(hex('49 02 0040 0000'))).toEqual(['MouseUp button=2 x=0.2500 y=0.0000']);
    expect(line(hex('4C 00 FFFF FFFF'))).toEqual(['MouseDouble button=0 x=1.0000 y=1.0000']);
    expect(line(hex('4A 0040 00C0 FF7F 0180'))).toEqual(['MouseMove x=0.2500 y=0.7500 dx=1.0000 dy=-1.0000']);
    expect(line(hex('4B 88FF 0080 0080'))).toEqual(['MouseWheel delta=-120 x=0.5000 y=0.5000']);
    expect(line(hex('46'))).toEqual(['MouseEnter']);
    expect(line(hex('47'))).toEqual(['MouseLeave']);
    expect(line(hex('50 02 0080 0080 00 FF 01 0040 0040 01 80 01'))).toEqual([
      'TouchStart finger=0 x=0.5000 y=0.5000 force=1.0000 inRange=1',
      'TouchStart finger=1 x=0.2500 y=0.2500 force=0.5020 inRange=1',
    ]);
    expect(line(encodeToStreamer.string(TO_STREAMER.UIInteraction.id, '{"a":1}'))).toEqual(['UIInteraction {"a":1}']);
    expect(line(encodeToStreamer.string(TO_STREAMER.Command.id, '{"ConsoleCommand":"stat fps"}'))).toEqual(['Command {"ConsoleCommand":"stat fps"}']);
    expect(line(encodeToStreamer.string(TO_STREAMER.UIInteraction.id, 'two\nlines'))).toEqual(['UIInteraction two\\u000alines']);
    expect(line(hex('5A 00 03 00'))).toEqual(['GamepadButtonPressed controller=0 button=3 repeat=0']);
    const analog = Buffer.alloc(11);
    analog.writeUInt8(92, 0);
    analog.writeUInt8(1, 1);
    analog.writeUInt8(2, 2);
    analog.writeDoubleLE(-0.5, 3);
    expect(line(analog)).toEqual(['GamepadAnalog controller=1 axis=2 value=-0.5000']);
    expect(line(hex('5E 01'))).toEqual(['GamepadDisconnected controller=1']);
  });

  it('has no input line for control messages', () => {
    for (const id of [0, 1, 2, 3, 4, 5, 7]) expect(describeInput(parseToStreamerMessage(Buffer.from([id])))).toEqual([]);
    expect(parseToStreamerMessage(Buffer.from([7]))).toEqual({ type: 'RequestInitialSettings' });
  });

  it('parses unknown ids as Unknown and throws on truncated messages', () => {
    expect(parseToStreamerMessage(hex('6E 0102'))).toEqual({ type: 'Unknown', id: 110, length: 3 });
    expect(() => parseToStreamerMessage(Buffer.alloc(0))).toThrow(MalformedMessageError);
    expect(() => parseToStreamerMessage(hex('3C 41'))).toThrow(MalformedMessageError);
    expect(() => parseToStreamerMessage(hex('32 0500 7B00'))).toThrow(/UIInteraction/);
    expect(() => parseToStreamerMessage(hex('50 02 0080 0080 00 FF 01'))).toThrow(MalformedMessageError);
  });

  it('encoders for test players produce what the parser reads', () => {
    expect(encodeToStreamer.string(TO_STREAMER.UIInteraction.id, '{"a":1}')).toEqual(hex('32 0700 7B00 2200 6100 2200 3A00 3100 7D00'));
    expect(encodeToStreamer.keyDown(65)).toEqual(hex('3C 41 00'));
    expect(encodeToStreamer.keyUp(65)).toEqual(hex('3D 41'));
    expect(encodeToStreamer.mouseButton(72, 0, 0.5, 0.5)).toEqual(hex('48 00 0080 0080'));
    expect(encodeToStreamer.mouseButton(73, 0, 1, 1)).toEqual(hex('49 00 FFFF FFFF'));
  });
});
