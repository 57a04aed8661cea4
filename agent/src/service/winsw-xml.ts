// The WinSW 2.x configuration that runs the agent as a Windows service, rendered from a plain
// description (pure, so it is tested on Linux). WinSW reads `<id>.xml` beside its renamed exe
// (agent-notes.md §4); this is that file's text. WinSW 1.17 (what node-windows ships, so what the
// package carries) reads every element here but <delayedAutoStart>, which the plan sets with sc.exe.
import type { ServiceAccount } from './service-account';

/** Restart delays after the first, second and each later failure (the last repeats), in seconds. */
export const RESTART_DELAYS_SECONDS = [10, 30, 60] as const;
/** A service that ran this long since its last failure counts failures from zero again. */
export const RESET_FAILURE_AFTER = '1 hour';
/** Size at which WinSW rolls the agent's stdout/stderr log, in KiB (10 MiB). */
export const LOG_ROLL_SIZE_KIB = 10 * 1024;
/** Rolled log files kept beside the live one. */
export const LOG_KEEP_FILES = 8;
/**
 * How long a stop waits, in seconds, after Ctrl+C (SIGINT for node) before WinSW kills the tree:
 * long enough for the agent to stop its apps (ask, wait, taskkill /F) and close its link.
 */
export const STOP_TIMEOUT_SECONDS = 60;

export interface WinswServiceSpec {
  /** Service name in the service control manager (`sc.exe query <id>`); also WinSW's exe and XML base name. */
  id: string;
  /** Display name (services.msc). */
  name: string;
  description: string;
  /** Absolute path of node.exe (or `%BASE%\node.exe`: WinSW expands %BASE% to its own folder). */
  executable: string;
  /** Arguments after the executable, each passed as one argument (quoted here when it needs it). */
  arguments: readonly string[];
  /** The service's working directory; a relative `dataDir` in the agent's config resolves against it. */
  workingDirectory: string;
  /** Folder of WinSW's own logs and the agent's captured stdout/stderr. */
  logDirectory: string;
  account: ServiceAccount;
  /** Environment variables the agent runs with, in this order. */
  environment: ReadonlyArray<readonly [string, string]>;
}

/** Escapes element text; `attribute` also escapes the double quote that would end an attribute. */
function escapeXml(text: string, attribute = false): string {
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(text)) throw new RangeError(`control character in service setting ${JSON.stringify(text)}`);
  const escaped = text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  return attribute ? escaped.replace(/"/g, '&quot;') : escaped;
}

/**
 * Quotes one argument the way the Windows C runtime splits a command line (CommandLineToArgvW):
 * quotes around text with a space, tab or quote, backslashes before a quote doubled.
 */
export function windowsArgument(arg: string): string {
  if (arg !== '' && !/[\s"]/.test(arg)) return arg;
  return `"${arg.replace(/(\\*)"/g, '$1$1\\"').replace(/(\\+)$/, '$1$1')}"`;
}

/** The XML text of the WinSW configuration, ending with a newline. */
export function renderWinswXml(spec: WinswServiceSpec): string {
  const x = escapeXml;
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!-- Written by `pixelfleet-agent service install`; run it again rather than editing this file. -->',
    '<service>',
    `  <id>${x(spec.id)}</id>`,
    `  <name>${x(spec.name)}</name>`,
    `  <description>${x(spec.description)}</description>`,
    `  <executable>${x(spec.executable)}</executable>`,
    `  <arguments>${x(spec.arguments.map(windowsArgument).join(' '))}</arguments>`,
    `  <workingdirectory>${x(spec.workingDirectory)}</workingdirectory>`,
    '  <startmode>Automatic</startmode>',
    '  <delayedAutoStart>true</delayedAutoStart>',
    ...RESTART_DELAYS_SECONDS.map((s) => `  <onfailure action="restart" delay="${s} sec"/>`),
    `  <resetfailure>${RESET_FAILURE_AFTER}</resetfailure>`,
    `  <stoptimeout>${STOP_TIMEOUT_SECONDS} sec</stoptimeout>`,
    // Ctrl+C reaches node first, so the agent stops its apps itself before WinSW ends the tree.
    '  <stopparentprocessfirst>true</stopparentprocessfirst>',
    `  <logpath>${x(spec.logDirectory)}</logpath>`,
    '  <log mode="roll-by-size">',
    `    <sizeThreshold>${LOG_ROLL_SIZE_KIB}</sizeThreshold>`,
    `    <keepFiles>${LOG_KEEP_FILES}</keepFiles>`,
    '  </log>',
    ...spec.environment.map(([name, value]) => `  <env name="${x(name, true)}" value="${x(value, true)}"/>`),
    ...serviceAccountXml(spec.account),
    '</service>',
  ];
  return `${lines.join('\n')}\n`;
}

function serviceAccountXml(account: ServiceAccount): string[] {
  // LocalSystem is WinSW's default: no element.
  if (account.kind === 'local-system') return [];
  return [
    '  <serviceaccount>',
    `    <domain>${escapeXml(account.domain)}</domain>`,
    `    <user>${escapeXml(account.user)}</user>`,
    // A gMSA logs on as a service without a password; WinSW grants it the right at install.
    ...(account.kind === 'gmsa' ? ['    <allowservicelogon>true</allowservicelogon>'] : []),
    '  </serviceaccount>',
  ];
}
