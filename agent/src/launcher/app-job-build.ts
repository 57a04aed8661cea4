// Builds Windows programs from C with mingw-w64 (Debian: gcc-mingw-w64-x86-64), here on Linux:
// the app-job launcher (npm run build:app-job) and the test programs its Wine test runs.
import { execa } from 'execa';
import { APP_JOB_EXE, APP_JOB_SOURCE } from './app-job';

/** The cross compiler (x86-64 Windows target). */
export const MINGW_GCC = 'x86_64-w64-mingw32-gcc';

/** Optimised, stripped, linked statically (no MinGW runtime DLL to ship), every warning an error. */
export const MINGW_FLAGS: readonly string[] = ['-O2', '-s', '-static', '-Wall', '-Wextra', '-Werror'];

/**
 * The Windows libraries app-job.exe links (after its source: ld resolves left to right): LSA logon
 * and rights, the token and security descriptor calls (advapi32, secur32), local accounts
 * (netapi32), its window station and desktop (user32), the random password (bcrypt), its
 * --owners arguments (shell32).
 */
export const APP_JOB_LIBRARIES: readonly string[] = ['-ladvapi32', '-lsecur32', '-lnetapi32', '-luser32', '-lbcrypt', '-lshell32'];

/**
 * Compiles one C file into a Windows executable at output, linking `libraries` after it.
 * @throws Error naming the compiler's complaint, or how to install it when it is missing.
 */
export async function compileWindowsProgram(source: string, output: string, extraFlags: readonly string[] = [], libraries: readonly string[] = []): Promise<string> {
  const result = await execa(MINGW_GCC, [...MINGW_FLAGS, ...extraFlags, '-o', output, source, ...libraries], { reject: false, stdin: 'ignore', all: true });
  if (result.failed) {
    const missing = (result as { code?: string }).code === 'ENOENT';
    throw new Error(missing
      ? `${MINGW_GCC} is not installed (Debian: apt-get install --no-install-recommends gcc-mingw-w64-x86-64)`
      : `${MINGW_GCC} could not build ${source}: ${result.all ?? result.shortMessage}`);
  }
  return output;
}

/** Builds app-job.exe (default: where the agent looks for it, APP_JOB_EXE). */
export function buildAppJob(output: string = APP_JOB_EXE): Promise<string> {
  return compileWindowsProgram(APP_JOB_SOURCE, output, [], APP_JOB_LIBRARIES);
}
