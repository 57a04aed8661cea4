// The account the agent's Windows service runs as, parsed from `--account`. Only accounts that
// log on without a password are accepted: a password would have to sit in the WinSW XML.

export type ServiceAccount =
  | { kind: 'local-system' }
  /** LocalService or NetworkService (domain NT AUTHORITY). */
  | { kind: 'builtin'; domain: 'NT AUTHORITY'; user: 'LocalService' | 'NetworkService' }
  /** The service's own virtual account, `NT SERVICE\<service id>`: it exists once the service does. */
  | { kind: 'virtual'; domain: 'NT SERVICE'; user: string }
  /** A group managed service account, `DOMAIN\name$`. */
  | { kind: 'gmsa'; domain: string; user: string };

export class ServiceAccountError extends Error {
  override readonly name = 'ServiceAccountError';
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Parses `--account` (case-insensitive for the built-in names); undefined means LocalSystem. */
export function parseServiceAccount(text: string | undefined): ServiceAccount {
  if (text === undefined) return { kind: 'local-system' };
  const t = text.trim();
  const lower = t.toLowerCase();
  if (lower === 'localsystem' || lower === 'nt authority\\system' || lower === 'system') return { kind: 'local-system' };
  if (lower === 'localservice' || lower === 'nt authority\\localservice') return { kind: 'builtin', domain: 'NT AUTHORITY', user: 'LocalService' };
  if (lower === 'networkservice' || lower === 'nt authority\\networkservice') return { kind: 'builtin', domain: 'NT AUTHORITY', user: 'NetworkService' };
  const slash = t.indexOf('\\');
  const domain = slash === -1 ? '' : t.slice(0, slash);
  const user = slash === -1 ? t : t.slice(slash + 1);
  if (domain.toLowerCase() === 'nt service' && NAME.test(user)) return { kind: 'virtual', domain: 'NT SERVICE', user };
  if (NAME.test(domain) && user.endsWith('$') && NAME.test(user.slice(0, -1))) return { kind: 'gmsa', domain, user };
  throw new ServiceAccountError(
    `--account "${text}" is not supported: use LocalSystem (the default), LocalService, NetworkService, ` +
      `a virtual account "NT SERVICE\\<service id>" or a gMSA "DOMAIN\\name$" (a user account would need its password in the service XML)`,
  );
}

/** The name icacls grants to: a well-known SID (`*S-1-5-18`) for built-in accounts, else DOMAIN\user. */
export function icaclsPrincipal(account: ServiceAccount): string {
  switch (account.kind) {
    case 'local-system':
      return '*S-1-5-18';
    case 'builtin':
      return account.user === 'LocalService' ? '*S-1-5-19' : '*S-1-5-20';
    case 'virtual':
    case 'gmsa':
      return `${account.domain}\\${account.user}`;
    default: {
      const unreachable: never = account;
      throw new Error(`unknown account ${String(unreachable)}`);
    }
  }
}

/** How the account reads in messages (`NT AUTHORITY\LocalService`). */
export function describeAccount(account: ServiceAccount): string {
  return account.kind === 'local-system' ? 'LocalSystem' : `${account.domain}\\${account.user}`;
}
