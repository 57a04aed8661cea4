// Where the committed video fixture lives; kept apart so reading the command line loads no werift.
import { fileURLToPath } from 'node:url';

/** The committed fixture: 1280x720, 30 fps, 90 frames, IDR every 15 frames (fixtures/README.md). */
export const DEFAULT_FIXTURE_PATH = fileURLToPath(new URL('./fixtures/testpattern.h264', import.meta.url));
