// The mock Unreal app as an agent's launcher.command, with optional failure flags, and the
// Pixel Streaming data-channel framing tests need to talk to it.
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');

/** argv for launcher.command; flags such as `-MockCrashAfterMs=500` are passed to every launch. */
export function mockAppCommand(...flags: string[]): string[] {
  return [process.execPath, resolve(root, 'test/mock-unreal/bin/mock-unreal.mjs'), ...flags];
}

/** Browser → app UIInteraction (50): u16 length in UTF-16 code units, then UTF-16LE text. */
export function uiInteraction(text: string): Buffer {
  const body = Buffer.from(text, 'utf16le');
  const out = Buffer.alloc(3 + body.length);
  out[0] = 50;
  out.writeUInt16LE(text.length, 1);
  body.copy(out, 3);
  return out;
}

/** App → browser text message (Response 1, InitialSettings 7, Protocol 255…): id then UTF-16LE. */
export function textOf(message: Buffer): { id: number; text: string } {
  return { id: message[0]!, text: message.subarray(1).toString('utf16le') };
}
