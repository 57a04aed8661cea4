// Runs a service plan (service-plan.ts) step by step on Windows: folders and files with node:fs,
// commands (and the owner listing, judged by folder-owners.ts) through an injected runner (execa
// by default). The first step that fails stops it.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execa } from 'execa';
import { foreignOwned, foreignOwnerMessage, ownerListingCommand, parseOwnerListing } from './folder-owners';
import type { ServiceStep } from './service-plan';
import { windowsArgument } from './winsw-xml';

export interface CommandResult {
  exitCode: number;
  /** stdout and stderr as they came. */
  output: string;
}

export type CommandRunner = (argv: readonly string[]) => Promise<CommandResult>;

export class ServiceStepError extends Error {
  override readonly name = 'ServiceStepError';
}

/** Runs argv[0] with the rest as arguments, no shell; a missing program is exit code -1. */
export const execaRunner: CommandRunner = async ([file, ...args]) => {
  if (file === undefined) throw new RangeError('empty command');
  const r = await execa(file, args, { reject: false, all: true, windowsHide: true });
  return { exitCode: r.exitCode ?? -1, output: r.all ?? r.message };
};

/**
 * Runs the steps in order, writing one line per step to `out`.
 * @throws ServiceStepError naming the step, its command and output, at the first failure.
 */
export async function executeServiceSteps(steps: readonly ServiceStep[], options: { run?: CommandRunner; out: (line: string) => void }): Promise<void> {
  const run = options.run ?? execaRunner;
  for (const [i, step] of steps.entries()) {
    const n = `${i + 1}/${steps.length}`;
    try {
      switch (step.kind) {
        case 'mkdir':
          mkdirSync(step.path, { recursive: true });
          options.out(`${n} created ${step.path}`);
          break;
        case 'copy':
          // A new file, made in the destination folder, takes that folder's access rules (a file
          // overwritten in place keeps its own, and its owner); 'wx' never follows a link planted there.
          rmSync(step.to, { force: true });
          writeFileSync(step.to, readFileSync(step.from), { flag: 'wx', mode: 0o600 });
          options.out(`${n} copied ${step.from} to ${step.to}`);
          break;
        case 'check-owners': {
          const argv = ownerListingCommand(step.lister, step.roots, step.parents);
          const r = await run(argv);
          if (r.exitCode !== 0) {
            throw new ServiceStepError(`step ${n} failed: listing the owners of ${step.roots.join(', ')} exited with ${r.exitCode}${r.output.trim() === '' ? '' : `:\n${r.output.trim()}`}`);
          }
          const listing = parseOwnerListing(r.output);
          const foreign = foreignOwned(listing, step.trustedAccounts);
          if (foreign.length > 0) throw new ServiceStepError(`step ${n} failed: ${foreignOwnerMessage(foreign)}`);
          options.out(`${n} checked the owners of ${listing.entries.length} items: Administrators, SYSTEM, service accounts or the installer`);
          break;
        }
        case 'write':
          writeFileSync(step.path, step.contents);
          options.out(`${n} wrote ${step.path}`);
          break;
        case 'run': {
          const line = step.argv.map(windowsArgument).join(' ');
          if (step.ifExists !== undefined && !existsSync(step.ifExists)) {
            options.out(`${n} skipped ${line} (${step.ifExists} does not exist)`);
            break;
          }
          const r = await run(step.argv);
          if (step.okExitCodes !== 'any' && !step.okExitCodes.includes(r.exitCode)) {
            throw new ServiceStepError(`step ${n} failed: ${line} exited with ${r.exitCode} (${step.why})${r.output.trim() === '' ? '' : `:\n${r.output.trim()}`}`);
          }
          options.out(`${n} ran ${line}${r.output.trim() === '' ? '' : `: ${r.output.trim()}`}`);
          break;
        }
        default: {
          const unreachable: never = step;
          throw new Error(`unknown step ${String(unreachable)}`);
        }
      }
    } catch (err) {
      if (err instanceof ServiceStepError) throw err;
      throw new ServiceStepError(`step ${n} failed: ${(err as Error).message}`);
    }
  }
}
