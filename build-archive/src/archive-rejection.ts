// Why a build archive was refused: a stable code for logs and the pipeline, and an objection a
// customer can read (it becomes the build's `objection`): short, naming the entry, never a stack.

export type ArchiveRejectionCode =
  /** The file is not a zip archive (an HTML page, an empty file, a truncated download). */
  | 'NOT_A_ZIP'
  /** An entry's name would escape the folder or cannot exist on Windows, or it is a symlink or device. */
  | 'UNSAFE_ENTRY'
  /** Two entries land on the same file on a case-insensitive file system, or one is both file and folder. */
  | 'NAME_COLLISION'
  /** Too many entries, too many bytes, or an entry compressed past the ratio bound (a zip bomb). */
  | 'LIMIT_EXCEEDED'
  /** An encrypted entry or a compression method other than Store and Deflate. */
  | 'UNSUPPORTED_ENTRY'
  /** The archive's data does not match its headers (CRC, sizes, offsets, deflate stream). */
  | 'CORRUPT'
  /** The entries are not a packaged Unreal app (missing or ambiguous executable, no .pak). */
  | 'NOT_AN_UNREAL_BUILD'
  /** Not enough free disk for the extracted build, or the disk filled up while extracting. */
  | 'DISK_FULL'
  /** The server could not write the extracted files (not the customer's fault). */
  | 'WRITE_FAILED';

export class ArchiveRejection extends Error {
  override readonly name = 'ArchiveRejection';
  constructor(
    readonly code: ArchiveRejectionCode,
    /** The objection, in words a customer understands. */
    readonly objection: string,
    options?: { cause?: unknown },
  ) {
    super(objection, options);
  }
}

const MAX_QUOTED_NAME = 160;
/** Control characters, and the bidirectional overrides that could make a name read as another. */
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069"]/g;

/**
 * An entry name as it appears in an objection: in double quotes, with control, bidi-override
 * and quote characters escaped (names are untrusted bytes), cut to 160 characters with an ellipsis.
 */
export function quoteEntryName(name: string): string {
  const cut = name.length > MAX_QUOTED_NAME ? `${name.slice(0, MAX_QUOTED_NAME)}…` : name;
  const escaped = cut.replace(UNPRINTABLE, (c) => (c === '"' ? '\\"' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
  return `"${escaped}"`;
}
