/*
 * app-job: runs one app in a Windows job object of its own, so that when this launcher dies (the
 * agent died and libuv's kill-on-close job took the launcher with it) the OS ends the whole app
 * tree, including the children the app started, which libuv's own job lets break away; and, when
 * the agent gives apps accounts of their own (`appAccounts`), runs the app as that account.
 *
 * Longer than ~400 lines: one translation unit, built by one mingw-w64 command with no build system
 * (agent/bin/build-app-job.mjs), so that the agent's packaging needs nothing but the compiler.
 *
 * Usage:
 *   app-job.exe [--account <name>] <app command line>
 *   app-job.exe --prepare-account <name>
 *   app-job.exe --remove-account <name>
 *   app-job.exe --sweep <folder>
 *   app-job.exe --list <folder>
 *   app-job.exe --owners [--parent <folder>]... --root <folder> [--root <folder>]...
 * Everything after this program's own name (and --account <name>) on its command line is the
 * app's command line, passed to CreateProcessW unchanged (Unreal parses its command line itself;
 * see agent/src/launcher/app-job.ts, which builds it). The app inherits the launcher's standard
 * handles, environment, current folder and show-window flags.
 *
 * The job: JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and no breakaway flags, so every process the app
 * starts is in it and none can leave it. This process holds the job's only handle (not
 * inheritable): the job closes, and the OS terminates every process in it, when this process
 * exits, whether it returns after the app exited (its leftovers end with it, as a POSIX app's
 * group does) or is terminated (taskkill /F, or the closing of libuv's job). The app is created
 * suspended and assigned to the job before its first instruction runs; an assignment inside the
 * agent's job nests (Windows 8 and later).
 *
 * --account <name>: the app runs as that local account (one per app slot, made by
 * --prepare-account at `service install`), never as the agent. The launcher logs it on with S4U
 * (no password exists anywhere: LsaLogonUser for a local account, batch logon, which needs the
 * agent's SeTcbPrivilege, so the service runs as LocalSystem) and starts the app with that token on
 * a window station and desktop of its own, open to that logon only: the app cannot reach another
 * app's windows or the service's desktop. Any failure on that path ends the launcher before the app
 * exists: an app never falls back to the agent's account.
 *
 * --prepare-account <name>: creates the local account if it does not exist (a random password
 * that nobody ever learns: S4U needs none), gives it the batch logon right and denies it every
 * other logon (interactive, remote desktop, network, service). --remove-account <name> deletes it
 * and its rights. Both exit 0 on success (removing an account that does not exist succeeds).
 *
 * --sweep <folder> (an absolute path, in double quotes when it holds a space): terminates every
 * process whose image (QueryFullProcessImageNameW) lies under folder, found with a toolhelp
 * snapshot, and prints "stopped <pid>" for each, then always "swept <stopped> of <seen> processes"
 * (stdout, UTF-8). That last line is the proof the tool ran: the agent reads a missing one as a
 * failure, never as "nothing left" (Wine's powershell.exe, which the sweep once used, is a stub that
 * prints nothing and exits 0). A process it may not open or query is skipped (another user's that
 * the agent cannot end anyway; never one of the agent's own apps, which run as the agent or as an
 * app account it holds a job over). --list <folder> finds the same processes without stopping
 * them: "running <pid>" each, then "found <n> of <seen> processes" (doctor's test tree).
 *
 * --owners: the owner of each --parent folder alone and of each --root folder and everything
 * under it (reparse points, such as junctions, are listed but not entered), for `service install`'s
 * owner check (agent/src/service/folder-owners.ts reads it), without PowerShell's Get-Acl. Prints
 * "installer<TAB><SID of the account running it>", then one line per item: "<owner SID><TAB><owner
 * name, or empty><TAB><path>" (Windows forbids tabs and line breaks in names, so a planted name
 * cannot forge a line). Any item it cannot read ends it with APP_JOB_EXIT_OWNERS: a listing that
 * might miss an owner is a failure.
 *
 * Exit: the app's exit code; otherwise one of the APP_JOB_EXIT_* codes below with one line
 * "app-job: <what failed>[: <system message> (Windows error <n>)]" on stderr. The codes fit in a
 * byte (Wine passes only the low 8 bits to Linux, and the tests run there); the stderr line tells
 * them from an app's own. agent/src/launcher/app-job.ts reads them (APP_JOB_EXIT_CODES; a test
 * compares the two).
 */
/* The SE_*_NAME privilege and right names as wide strings. */
#define UNICODE
#define _UNICODE
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <ntsecapi.h>
#include <lm.h>
#include <sddl.h>
#include <bcrypt.h>
#include <tlhelp32.h>
#include <aclapi.h>
#include <shellapi.h>

#define APP_JOB_EXIT_USAGE 240
#define APP_JOB_EXIT_CREATE_JOB 241
#define APP_JOB_EXIT_LIMIT_JOB 242
#define APP_JOB_EXIT_LAUNCH 243
#define APP_JOB_EXIT_ASSIGN 244
#define APP_JOB_EXIT_RESUME 245
#define APP_JOB_EXIT_WAIT 246
#define APP_JOB_EXIT_LOGON 247
#define APP_JOB_EXIT_ACCOUNT 248
#define APP_JOB_EXIT_SWEEP 249
#define APP_JOB_EXIT_OWNERS 250

/* The longest local account name Windows takes (SAM's limit). */
#define ACCOUNT_NAME_MAX 20
/* Names this launcher and its callers give LSA. */
#define LOGON_PROCESS_NAME "pixelfleet-app-job"

/* Writes text to stderr as UTF-8 (the agent reads the pipe as UTF-8). */
static void write_stderr(const wchar_t *text) {
  HANDLE err = GetStdHandle(STD_ERROR_HANDLE);
  if (err == NULL || err == INVALID_HANDLE_VALUE) return;
  int bytes = WideCharToMultiByte(CP_UTF8, 0, text, -1, NULL, 0, NULL, NULL);
  if (bytes <= 1) return;
  char *utf8 = (char *)HeapAlloc(GetProcessHeap(), 0, (SIZE_T)bytes);
  if (utf8 == NULL) return;
  WideCharToMultiByte(CP_UTF8, 0, text, -1, utf8, bytes, NULL, NULL);
  DWORD written;
  WriteFile(err, utf8, (DWORD)(bytes - 1), &written, NULL);
  HeapFree(GetProcessHeap(), 0, utf8);
}

/* Reports a failure ("app-job: <what>: <system message> (Windows error <n>)"; error ERROR_SUCCESS: no system part) and exits with code. */
static void fail(UINT code, const wchar_t *what, DWORD error) {
  wchar_t message[512] = L"";
  DWORD n = error == ERROR_SUCCESS ? 0 : FormatMessageW(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, NULL, error, 0, message, 512, NULL);
  while (n > 0 && (message[n - 1] == L'\r' || message[n - 1] == L'\n' || message[n - 1] == L' ' || message[n - 1] == L'.')) message[--n] = L'\0';
  wchar_t line[1024];
  if (error == ERROR_SUCCESS) wsprintfW(line, L"app-job: %ls\n", what);
  else if (n == 0) wsprintfW(line, L"app-job: %ls: Windows error %lu\n", what, error);
  else wsprintfW(line, L"app-job: %ls: %ls (Windows error %lu)\n", what, message, error);
  write_stderr(line);
  ExitProcess(code);
}

/* fail() with "<what> <name>" (an account name is at most ACCOUNT_NAME_MAX characters). */
static void fail_for(UINT code, const wchar_t *what, const wchar_t *name, DWORD error) {
  wchar_t text[256];
  wsprintfW(text, L"%ls %ls", what, name);
  fail(code, text, error);
}

/* An LSA status as a Windows error, for fail(). */
static DWORD lsa_error(NTSTATUS status) {
  return LsaNtStatusToWinError(status);
}

/*
 * The command line after this program's own name. argv[0] follows CreateProcess's rule for the
 * program name, not the C runtime's: in quotes it runs to the next quote, otherwise to the first
 * space or tab. The spaces and tabs after it are skipped.
 */
static const wchar_t *after_program_name(const wchar_t *line) {
  if (*line == L'"') {
    line++;
    while (*line != L'\0' && *line != L'"') line++;
    if (*line == L'"') line++;
  } else {
    while (*line != L'\0' && *line != L' ' && *line != L'\t') line++;
  }
  while (*line == L' ' || *line == L'\t') line++;
  return line;
}

/* Whether line starts with the option `flag`, alone or followed by a space or tab. */
static BOOL starts_with_option(const wchar_t *line, const wchar_t *flag) {
  int n = lstrlenW(flag);
  for (int i = 0; i < n; i++) {
    if (line[i] != flag[i]) return FALSE;
  }
  return line[n] == L'\0' || line[n] == L' ' || line[n] == L'\t';
}

/*
 * Reads the account name after an option into name (letters, digits, '-', '_' and '.', at most
 * ACCOUNT_NAME_MAX: what the agent gives, never quoted) and returns the rest of the line, its
 * leading spaces skipped. Anything else is a usage error.
 */
static const wchar_t *read_account_name(const wchar_t *line, wchar_t name[ACCOUNT_NAME_MAX + 1]) {
  while (*line == L' ' || *line == L'\t') line++;
  int n = 0;
  while (*line != L'\0' && *line != L' ' && *line != L'\t') {
    wchar_t c = *line;
    BOOL allowed = (c >= L'a' && c <= L'z') || (c >= L'A' && c <= L'Z') || (c >= L'0' && c <= L'9') || c == L'-' || c == L'_' || c == L'.';
    if (!allowed || n == ACCOUNT_NAME_MAX) fail(APP_JOB_EXIT_USAGE, L"an account name is 1 to 20 letters, digits, '-', '_' or '.'", ERROR_SUCCESS);
    name[n++] = c;
    line++;
  }
  name[n] = L'\0';
  if (n == 0) fail(APP_JOB_EXIT_USAGE, L"an account option needs a name", ERROR_SUCCESS);
  while (*line == L' ' || *line == L'\t') line++;
  return line;
}

/* Enables one of this process's privileges; FALSE when the token does not hold it. */
static BOOL enable_privilege(const wchar_t *privilege) {
  HANDLE token;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token)) return FALSE;
  TOKEN_PRIVILEGES wanted;
  wanted.PrivilegeCount = 1;
  wanted.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
  BOOL ok = LookupPrivilegeValueW(NULL, privilege, &wanted.Privileges[0].Luid) && AdjustTokenPrivileges(token, FALSE, &wanted, 0, NULL, NULL) &&
            GetLastError() == ERROR_SUCCESS;
  CloseHandle(token);
  return ok;
}

/* A counted LSA string over a constant C string. */
static LSA_STRING lsa_string(const char *text) {
  LSA_STRING s;
  s.Buffer = (PCHAR)text;
  s.Length = (USHORT)lstrlenA(text);
  s.MaximumLength = (USHORT)(s.Length + 1);
  return s;
}

/*
 * A primary token for the local account `name`, by S4U: no password. Only a logon process
 * (LsaRegisterLogonProcess, which needs SeTcbPrivilege) gets a token that can start a process;
 * an untrusted caller would get an identification token. Batch logon: the right --prepare-account
 * grants, and the only logon those accounts are allowed.
 */
static HANDLE logon_account(const wchar_t *name) {
  enable_privilege(SE_TCB_NAME); /* LsaRegisterLogonProcess says if it is missing. */
  LSA_STRING logon_process = lsa_string(LOGON_PROCESS_NAME);
  HANDLE lsa;
  LSA_OPERATIONAL_MODE mode;
  NTSTATUS status = LsaRegisterLogonProcess(&logon_process, &lsa, &mode);
  if (status != 0) fail(APP_JOB_EXIT_LOGON, L"cannot log apps on as their accounts (the agent must run as LocalSystem)", lsa_error(status));
  LSA_STRING package_name = lsa_string(MSV1_0_PACKAGE_NAME);
  ULONG package;
  status = LsaLookupAuthenticationPackage(lsa, &package_name, &package);
  if (status != 0) fail(APP_JOB_EXIT_LOGON, L"cannot find the local authentication package", lsa_error(status));

  wchar_t computer[MAX_COMPUTERNAME_LENGTH + 1];
  DWORD computer_chars = MAX_COMPUTERNAME_LENGTH + 1;
  if (!GetComputerNameW(computer, &computer_chars)) fail(APP_JOB_EXIT_LOGON, L"cannot read the computer name", GetLastError());
  /* The request and its two strings in one buffer, the strings' pointers into it. */
  USHORT name_bytes = (USHORT)(lstrlenW(name) * sizeof(wchar_t));
  USHORT computer_bytes = (USHORT)(computer_chars * sizeof(wchar_t));
  ULONG size = (ULONG)sizeof(MSV1_0_S4U_LOGON) + name_bytes + computer_bytes;
  MSV1_0_S4U_LOGON *s4u = (MSV1_0_S4U_LOGON *)HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, size);
  if (s4u == NULL) fail(APP_JOB_EXIT_LOGON, L"cannot build the logon request", ERROR_NOT_ENOUGH_MEMORY);
  s4u->MessageType = MsV1_0S4ULogon;
  BYTE *strings = (BYTE *)(s4u + 1);
  CopyMemory(strings, name, name_bytes);
  s4u->UserPrincipalName.Buffer = (PWSTR)strings;
  s4u->UserPrincipalName.Length = s4u->UserPrincipalName.MaximumLength = name_bytes;
  CopyMemory(strings + name_bytes, computer, computer_bytes);
  s4u->DomainName.Buffer = (PWSTR)(strings + name_bytes);
  s4u->DomainName.Length = s4u->DomainName.MaximumLength = computer_bytes;

  TOKEN_SOURCE source;
  CopyMemory(source.SourceName, "pxfleet", 8);
  AllocateLocallyUniqueId(&source.SourceIdentifier);
  LSA_STRING origin = lsa_string(LOGON_PROCESS_NAME);
  PVOID profile = NULL;
  ULONG profile_bytes = 0;
  LUID logon_id;
  HANDLE token = NULL;
  QUOTA_LIMITS quotas;
  NTSTATUS substatus = 0;
  status = LsaLogonUser(lsa, &origin, Batch, package, s4u, size, NULL, &source, &profile, &profile_bytes, &logon_id, &token, &quotas, &substatus);
  if (profile != NULL) LsaFreeReturnBuffer(profile);
  HeapFree(GetProcessHeap(), 0, s4u);
  LsaDeregisterLogonProcess(lsa);
  /* STATUS_ACCOUNT_RESTRICTION (a disabled account, a missing logon right…) says why in the substatus. */
  if (status != 0) fail_for(APP_JOB_EXIT_LOGON, L"cannot log on as", name, lsa_error(substatus != 0 ? substatus : status));
  return token;
}

/* The logon SID of a token (S-1-5-5-x-y) as a string (LocalFree it); fails the launch when absent. */
static wchar_t *logon_sid_string(HANDLE token) {
  DWORD bytes = 0;
  GetTokenInformation(token, TokenGroups, NULL, 0, &bytes);
  TOKEN_GROUPS *groups = (TOKEN_GROUPS *)HeapAlloc(GetProcessHeap(), 0, bytes == 0 ? 1 : bytes);
  if (groups == NULL || !GetTokenInformation(token, TokenGroups, groups, bytes, &bytes)) fail(APP_JOB_EXIT_LOGON, L"cannot read the app's logon token", GetLastError());
  for (DWORD i = 0; i < groups->GroupCount; i++) {
    if ((groups->Groups[i].Attributes & SE_GROUP_LOGON_ID) == SE_GROUP_LOGON_ID) {
      wchar_t *text;
      if (!ConvertSidToStringSidW(groups->Groups[i].Sid, &text)) fail(APP_JOB_EXIT_LOGON, L"cannot read the app's logon SID", GetLastError());
      HeapFree(GetProcessHeap(), 0, groups);
      return text;
    }
  }
  fail(APP_JOB_EXIT_LOGON, L"the app's logon token has no logon SID", ERROR_SUCCESS);
  return NULL;
}

/*
 * A window station and desktop for the app alone (SYSTEM and the app's logon, nobody else):
 * the service's own window station admits SYSTEM only, and a shared one would let apps reach
 * each other's windows. Writes "<station>\Default" into desktop_path; the handles stay open in
 * this process for as long as the app runs (closing them at exit frees both).
 */
static void make_app_desktop(HANDLE token, wchar_t desktop_path[64]) {
  wchar_t *logon_sid = logon_sid_string(token);
  wchar_t sddl[256];
  wsprintfW(sddl, L"D:P(A;;GA;;;SY)(A;;GA;;;%ls)", logon_sid);
  LocalFree(logon_sid);
  SECURITY_ATTRIBUTES attributes;
  attributes.nLength = sizeof attributes;
  attributes.bInheritHandle = FALSE;
  if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl, SDDL_REVISION_1, &attributes.lpSecurityDescriptor, NULL)) {
    fail(APP_JOB_EXIT_LOGON, L"cannot describe the app's desktop access", GetLastError());
  }
  wchar_t station_name[40];
  wsprintfW(station_name, L"pixelfleet-app-%lu", GetCurrentProcessId());
  HWINSTA station = CreateWindowStationW(station_name, 0, WINSTA_ALL_ACCESS, &attributes);
  if (station == NULL) fail(APP_JOB_EXIT_LOGON, L"cannot create the app's window station", GetLastError());
  /* CreateDesktopW makes the desktop in the calling process's window station. */
  HWINSTA own = GetProcessWindowStation();
  if (!SetProcessWindowStation(station)) fail(APP_JOB_EXIT_LOGON, L"cannot enter the app's window station", GetLastError());
  HDESK desktop = CreateDesktopW(L"Default", NULL, NULL, 0, GENERIC_ALL, &attributes);
  DWORD desktop_error = GetLastError();
  SetProcessWindowStation(own);
  LocalFree(attributes.lpSecurityDescriptor);
  if (desktop == NULL) fail(APP_JOB_EXIT_LOGON, L"cannot create the app's desktop", desktop_error);
  wsprintfW(desktop_path, L"%ls\\Default", station_name);
}

/* A password nobody will ever type or need (S4U logs the account on without one), long and of every character class. */
static void random_password(wchar_t password[33]) {
  static const wchar_t *const classes[4] = {L"ABCDEFGHJKLMNPQRSTUVWXYZ", L"abcdefghijkmnopqrstuvwxyz", L"23456789", L"!#%+-.:=?@^_~"};
  BYTE random[32];
  NTSTATUS status = BCryptGenRandom(NULL, random, sizeof random, BCRYPT_USE_SYSTEM_PREFERRED_RNG);
  if (status != 0) fail(APP_JOB_EXIT_ACCOUNT, L"cannot draw a random password", (DWORD)status);
  for (int i = 0; i < 32; i++) {
    const wchar_t *chars = classes[i < 4 ? i : random[i] % 4];
    password[i] = chars[random[i] % lstrlenW(chars)];
  }
  password[32] = L'\0';
  SecureZeroMemory(random, sizeof random);
}

/* The account's SID (HeapFree it), or NULL when there is no such account. */
static PSID account_sid(const wchar_t *name) {
  DWORD sid_bytes = 0, domain_chars = 0;
  SID_NAME_USE use;
  LookupAccountNameW(NULL, name, NULL, &sid_bytes, NULL, &domain_chars, &use);
  if (sid_bytes == 0) return NULL;
  PSID sid = HeapAlloc(GetProcessHeap(), 0, sid_bytes);
  wchar_t *domain = (wchar_t *)HeapAlloc(GetProcessHeap(), 0, (domain_chars + 1) * sizeof(wchar_t));
  if (sid == NULL || domain == NULL) fail(APP_JOB_EXIT_ACCOUNT, L"cannot look the account up", ERROR_NOT_ENOUGH_MEMORY);
  BOOL found = LookupAccountNameW(NULL, name, sid, &sid_bytes, domain, &domain_chars, &use);
  HeapFree(GetProcessHeap(), 0, domain);
  if (!found) {
    HeapFree(GetProcessHeap(), 0, sid);
    return NULL;
  }
  return sid;
}

static LSA_HANDLE open_policy(void) {
  LSA_OBJECT_ATTRIBUTES attributes;
  ZeroMemory(&attributes, sizeof attributes);
  LSA_HANDLE policy;
  NTSTATUS status = LsaOpenPolicy(NULL, &attributes, POLICY_CREATE_ACCOUNT | POLICY_LOOKUP_NAMES, &policy);
  if (status != 0) fail(APP_JOB_EXIT_ACCOUNT, L"cannot open the local security policy (run as an administrator)", lsa_error(status));
  return policy;
}

static LSA_UNICODE_STRING lsa_unicode(const wchar_t *text) {
  LSA_UNICODE_STRING s;
  s.Buffer = (PWSTR)text;
  s.Length = (USHORT)(lstrlenW(text) * sizeof(wchar_t));
  s.MaximumLength = (USHORT)(s.Length + sizeof(wchar_t));
  return s;
}

/* --prepare-account: the account (made if missing) may log on as a batch job and in no other way. */
static void prepare_account(const wchar_t *name) {
  USER_INFO_1 *existing = NULL;
  if (NetUserGetInfo(NULL, name, 1, (BYTE **)&existing) == NERR_Success) {
    NetApiBufferFree(existing);
  } else {
    wchar_t password[33];
    random_password(password);
    USER_INFO_1 user;
    ZeroMemory(&user, sizeof user);
    user.usri1_name = (LPWSTR)name;
    user.usri1_password = password;
    user.usri1_priv = USER_PRIV_USER;
    user.usri1_comment = (LPWSTR)L"Pixelfleet: runs one app slot's Unreal apps (no password in use; batch logon only)";
    user.usri1_flags = UF_SCRIPT | UF_NORMAL_ACCOUNT | UF_DONT_EXPIRE_PASSWD | UF_PASSWD_CANT_CHANGE;
    DWORD parameter = 0;
    NET_API_STATUS status = NetUserAdd(NULL, 1, (BYTE *)&user, &parameter);
    SecureZeroMemory(password, sizeof password);
    if (status != NERR_Success) fail_for(APP_JOB_EXIT_ACCOUNT, L"cannot create the account", name, status);
  }
  PSID sid = account_sid(name);
  if (sid == NULL) fail_for(APP_JOB_EXIT_ACCOUNT, L"cannot find the account", name, GetLastError());
  LSA_HANDLE policy = open_policy();
  LSA_UNICODE_STRING rights[5] = {
      lsa_unicode(SE_BATCH_LOGON_NAME),
      lsa_unicode(SE_DENY_INTERACTIVE_LOGON_NAME),
      lsa_unicode(SE_DENY_REMOTE_INTERACTIVE_LOGON_NAME),
      lsa_unicode(SE_DENY_NETWORK_LOGON_NAME),
      lsa_unicode(SE_DENY_SERVICE_LOGON_NAME),
  };
  NTSTATUS status = LsaAddAccountRights(policy, sid, rights, 5);
  LsaClose(policy);
  HeapFree(GetProcessHeap(), 0, sid);
  if (status != 0) fail_for(APP_JOB_EXIT_ACCOUNT, L"cannot set the logon rights of", name, lsa_error(status));
}

/* --remove-account: its rights, then the account (an account already gone is fine). */
static void remove_account(const wchar_t *name) {
  PSID sid = account_sid(name);
  if (sid == NULL) return;
  LSA_HANDLE policy = open_policy();
  NTSTATUS status = LsaRemoveAccountRights(policy, sid, TRUE, NULL, 0);
  LsaClose(policy);
  HeapFree(GetProcessHeap(), 0, sid);
  /* STATUS_OBJECT_NAME_NOT_FOUND: the account held no rights. */
  if (status != 0 && lsa_error(status) != ERROR_FILE_NOT_FOUND) fail_for(APP_JOB_EXIT_ACCOUNT, L"cannot remove the logon rights of", name, lsa_error(status));
  NET_API_STATUS deleted = NetUserDel(NULL, name);
  if (deleted != NERR_Success && deleted != NERR_UserNotFound) fail_for(APP_JOB_EXIT_ACCOUNT, L"cannot delete the account", name, deleted);
}

/* Writes text to stdout as UTF-8. */
static void write_stdout(const wchar_t *text) {
  HANDLE out = GetStdHandle(STD_OUTPUT_HANDLE);
  if (out == NULL || out == INVALID_HANDLE_VALUE) return;
  char utf8[1024];
  int bytes = WideCharToMultiByte(CP_UTF8, 0, text, -1, utf8, (int)sizeof utf8, NULL, NULL);
  if (bytes <= 1) return;
  DWORD written;
  WriteFile(out, utf8, (DWORD)(bytes - 1), &written, NULL);
}

/* Whether path lies under prefix (which ends in a backslash), ignoring case as NTFS does. */
static BOOL path_under(const wchar_t *path, const wchar_t *prefix, int prefix_chars) {
  if (lstrlenW(path) <= prefix_chars) return FALSE;
  return CompareStringOrdinal(path, prefix_chars, prefix, prefix_chars, TRUE) == CSTR_EQUAL;
}

/* --sweep (terminate) and --list: see the usage at the top. */
static void scan_folder(const wchar_t *arg, BOOL terminate) {
  wchar_t prefix[MAX_PATH + 2];
  int n = 0;
  if (*arg == L'"') {
    arg++;
    while (arg[n] != L'\0' && arg[n] != L'"') n++;
    if (arg[n] != L'"' || arg[n + 1] != L'\0') fail(APP_JOB_EXIT_USAGE, L"--sweep and --list take one folder, in double quotes when it holds a space", ERROR_SUCCESS);
  } else {
    while (arg[n] != L'\0') n++;
  }
  if (n < 3 || n > MAX_PATH || !((arg[1] == L':' && arg[2] == L'\\') || (arg[0] == L'\\' && arg[1] == L'\\'))) {
    fail(APP_JOB_EXIT_USAGE, L"--sweep and --list need an absolute folder path (C:\\... or \\\\server\\...)", ERROR_SUCCESS);
  }
  lstrcpynW(prefix, arg, n + 1);
  if (prefix[n - 1] != L'\\') prefix[n++] = L'\\';
  prefix[n] = L'\0';

  HANDLE snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (snapshot == INVALID_HANDLE_VALUE) fail(APP_JOB_EXIT_SWEEP, L"cannot list the processes (CreateToolhelp32Snapshot)", GetLastError());
  PROCESSENTRY32W entry;
  entry.dwSize = sizeof entry;
  if (!Process32FirstW(snapshot, &entry)) fail(APP_JOB_EXIT_SWEEP, L"cannot read the process list (Process32FirstW)", GetLastError());
  DWORD self = GetCurrentProcessId();
  unsigned seen = 0, matched = 0;
  do {
    seen++;
    if (entry.th32ProcessID == self || entry.th32ProcessID == 0) continue;
    HANDLE process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | (terminate ? PROCESS_TERMINATE : 0), FALSE, entry.th32ProcessID);
    if (process == NULL) continue;
    wchar_t image[MAX_PATH * 2];
    DWORD chars = MAX_PATH * 2;
    if (QueryFullProcessImageNameW(process, 0, image, &chars) && path_under(image, prefix, n) && (!terminate || TerminateProcess(process, 1))) {
      wchar_t line[64];
      wsprintfW(line, terminate ? L"stopped %lu\r\n" : L"running %lu\r\n", entry.th32ProcessID);
      write_stdout(line);
      matched++;
    }
    CloseHandle(process);
  } while (Process32NextW(snapshot, &entry));
  CloseHandle(snapshot);
  wchar_t summary[96];
  wsprintfW(summary, terminate ? L"swept %u of %u processes\r\n" : L"found %u of %u processes\r\n", matched, seen);
  write_stdout(summary);
  ExitProcess(0);
}

/* Writes UTF-8 text of any length to stdout; a failed write ends the listing (its reader must not take a cut listing for a whole one). */
static void write_stdout_all(const wchar_t *text) {
  HANDLE out = GetStdHandle(STD_OUTPUT_HANDLE);
  int bytes = WideCharToMultiByte(CP_UTF8, 0, text, -1, NULL, 0, NULL, NULL);
  if (bytes <= 1) return;
  char *utf8 = (char *)HeapAlloc(GetProcessHeap(), 0, (SIZE_T)bytes);
  if (utf8 == NULL) fail(APP_JOB_EXIT_OWNERS, L"out of memory", ERROR_NOT_ENOUGH_MEMORY);
  WideCharToMultiByte(CP_UTF8, 0, text, -1, utf8, bytes, NULL, NULL);
  DWORD written;
  BOOL ok = WriteFile(out, utf8, (DWORD)(bytes - 1), &written, NULL);
  HeapFree(GetProcessHeap(), 0, utf8);
  if (!ok) fail(APP_JOB_EXIT_OWNERS, L"cannot write the owner listing", GetLastError());
}

/* One listing line for path: its owner's SID, the owner's name (empty when it has none) and the path. */
static void list_owner(const wchar_t *path) {
  PSID owner = NULL;
  PSECURITY_DESCRIPTOR descriptor = NULL;
  DWORD error = GetNamedSecurityInfoW(path, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION, &owner, NULL, NULL, NULL, &descriptor);
  if (error != ERROR_SUCCESS) {
    write_stderr(path);
    write_stderr(L"\n");
    fail(APP_JOB_EXIT_OWNERS, L"cannot read the owner of the path above", error);
  }
  wchar_t *sid = NULL;
  if (!ConvertSidToStringSidW(owner, &sid)) fail(APP_JOB_EXIT_OWNERS, L"cannot write an owner's SID", GetLastError());
  wchar_t name[256] = L"", domain[256] = L"", account[520] = L"";
  DWORD name_chars = 256, domain_chars = 256;
  SID_NAME_USE use;
  if (LookupAccountSidW(NULL, owner, name, &name_chars, domain, &domain_chars, &use)) {
    if (domain[0] != L'\0') wsprintfW(account, L"%ls\\%ls", domain, name);
    else lstrcpyW(account, name);
  }
  SIZE_T chars = (SIZE_T)lstrlenW(sid) + lstrlenW(account) + lstrlenW(path) + 8;
  wchar_t *line = (wchar_t *)HeapAlloc(GetProcessHeap(), 0, chars * sizeof(wchar_t));
  if (line == NULL) fail(APP_JOB_EXIT_OWNERS, L"out of memory", ERROR_NOT_ENOUGH_MEMORY);
  lstrcpyW(line, sid);
  lstrcatW(line, L"\t");
  lstrcatW(line, account);
  lstrcatW(line, L"\t");
  lstrcatW(line, path);
  lstrcatW(line, L"\r\n");
  write_stdout_all(line);
  HeapFree(GetProcessHeap(), 0, line);
  LocalFree(sid);
  LocalFree(descriptor);
}

/* Lists the owner of everything under folder, depth first; a reparse point is listed, not entered. */
static void list_owners_under(const wchar_t *folder) {
  SIZE_T folder_chars = (SIZE_T)lstrlenW(folder);
  wchar_t *pattern = (wchar_t *)HeapAlloc(GetProcessHeap(), 0, (folder_chars + 3) * sizeof(wchar_t));
  if (pattern == NULL) fail(APP_JOB_EXIT_OWNERS, L"out of memory", ERROR_NOT_ENOUGH_MEMORY);
  lstrcpyW(pattern, folder);
  lstrcatW(pattern, folder_chars > 0 && folder[folder_chars - 1] == L'\\' ? L"*" : L"\\*");
  WIN32_FIND_DATAW found;
  HANDLE search = FindFirstFileExW(pattern, FindExInfoBasic, &found, FindExSearchNameMatch, NULL, 0);
  if (search == INVALID_HANDLE_VALUE) {
    DWORD error = GetLastError();
    if (error == ERROR_FILE_NOT_FOUND) return; /* an empty folder (a drive root has no . entry) */
    write_stderr(folder);
    write_stderr(L"\n");
    fail(APP_JOB_EXIT_OWNERS, L"cannot list the folder above", error);
  }
  do {
    if (lstrcmpW(found.cFileName, L".") == 0 || lstrcmpW(found.cFileName, L"..") == 0) continue;
    wchar_t *path = (wchar_t *)HeapAlloc(GetProcessHeap(), 0, (folder_chars + lstrlenW(found.cFileName) + 2) * sizeof(wchar_t));
    if (path == NULL) fail(APP_JOB_EXIT_OWNERS, L"out of memory", ERROR_NOT_ENOUGH_MEMORY);
    lstrcpyW(path, folder);
    if (folder_chars > 0 && folder[folder_chars - 1] != L'\\') lstrcatW(path, L"\\");
    lstrcatW(path, found.cFileName);
    list_owner(path);
    if ((found.dwFileAttributes & FILE_ATTRIBUTE_DIRECTORY) && !(found.dwFileAttributes & FILE_ATTRIBUTE_REPARSE_POINT)) list_owners_under(path);
    HeapFree(GetProcessHeap(), 0, path);
  } while (FindNextFileW(search, &found));
  DWORD error = GetLastError();
  FindClose(search);
  if (error != ERROR_NO_MORE_FILES) fail(APP_JOB_EXIT_OWNERS, L"cannot read a folder listing to its end", error);
}

/* --owners: see the usage at the top. */
static void list_owners(void) {
  int argc = 0;
  wchar_t **argv = CommandLineToArgvW(GetCommandLineW(), &argc);
  if (argv == NULL) fail(APP_JOB_EXIT_OWNERS, L"cannot read its command line", GetLastError());
  int roots = 0;
  for (int i = 2; i < argc; i += 2) {
    BOOL root = lstrcmpW(argv[i], L"--root") == 0;
    if ((!root && lstrcmpW(argv[i], L"--parent") != 0) || i + 1 >= argc) {
      fail(APP_JOB_EXIT_USAGE, L"usage: app-job.exe --owners [--parent <folder>]... --root <folder> [--root <folder>]...", ERROR_SUCCESS);
    }
    if (root) roots++;
  }
  if (roots == 0) fail(APP_JOB_EXIT_USAGE, L"--owners needs at least one --root <folder>", ERROR_SUCCESS);

  HANDLE token;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)) fail(APP_JOB_EXIT_OWNERS, L"cannot open its own token", GetLastError());
  BYTE user[SECURITY_MAX_SID_SIZE + sizeof(TOKEN_USER)];
  DWORD size;
  if (!GetTokenInformation(token, TokenUser, user, sizeof user, &size)) fail(APP_JOB_EXIT_OWNERS, L"cannot read its own account", GetLastError());
  CloseHandle(token);
  wchar_t *installer = NULL;
  if (!ConvertSidToStringSidW(((TOKEN_USER *)user)->User.Sid, &installer)) fail(APP_JOB_EXIT_OWNERS, L"cannot write its own SID", GetLastError());
  wchar_t line[128];
  wsprintfW(line, L"installer\t%ls\r\n", installer);
  write_stdout_all(line);
  LocalFree(installer);

  for (int i = 2; i + 1 < argc; i += 2) {
    list_owner(argv[i + 1]);
    if (lstrcmpW(argv[i], L"--root") == 0) list_owners_under(argv[i + 1]);
  }
  ExitProcess(0);
}

int main(void) {
  const wchar_t *app_line = after_program_name(GetCommandLineW());
  wchar_t account[ACCOUNT_NAME_MAX + 1] = L"";
  if (starts_with_option(app_line, L"--prepare-account") || starts_with_option(app_line, L"--remove-account")) {
    BOOL prepare = app_line[2] == L'p';
    const wchar_t *rest = read_account_name(app_line + (prepare ? 17 : 16), account);
    if (*rest != L'\0') fail(APP_JOB_EXIT_USAGE, L"nothing may follow the account name of --prepare-account or --remove-account", ERROR_SUCCESS);
    if (prepare) prepare_account(account);
    else remove_account(account);
    ExitProcess(0);
  }
  if (starts_with_option(app_line, L"--sweep")) scan_folder(after_program_name(app_line), TRUE);
  if (starts_with_option(app_line, L"--list")) scan_folder(after_program_name(app_line), FALSE);
  if (starts_with_option(app_line, L"--owners")) list_owners();
  if (starts_with_option(app_line, L"--account")) app_line = read_account_name(app_line + 9, account);
  if (*app_line == L'\0') fail(APP_JOB_EXIT_USAGE, L"no app command line given (usage: app-job.exe [--account <name>] <app command line>)", ERROR_SUCCESS);

  /* Not inheritable (no security attributes): the app never holds a handle that keeps the job open. */
  HANDLE job = CreateJobObjectW(NULL, NULL);
  if (job == NULL) fail(APP_JOB_EXIT_CREATE_JOB, L"cannot create the job object", GetLastError());
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
  ZeroMemory(&limits, sizeof limits);
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits)) {
    fail(APP_JOB_EXIT_LIMIT_JOB, L"cannot set kill-on-job-close on the job object", GetLastError());
  }

  /* CreateProcessW may write to its command line: give it a copy. */
  SIZE_T chars = (SIZE_T)lstrlenW(app_line) + 1;
  wchar_t *command_line = (wchar_t *)HeapAlloc(GetProcessHeap(), 0, chars * sizeof(wchar_t));
  if (command_line == NULL) fail(APP_JOB_EXIT_LAUNCH, L"cannot copy the app command line", ERROR_NOT_ENOUGH_MEMORY);
  lstrcpyW(command_line, app_line);

  STARTUPINFOW own;
  GetStartupInfoW(&own);
  STARTUPINFOW startup;
  ZeroMemory(&startup, sizeof startup);
  startup.cb = sizeof startup;
  startup.dwFlags = STARTF_USESTDHANDLES | (own.dwFlags & STARTF_USESHOWWINDOW);
  startup.wShowWindow = own.wShowWindow;
  startup.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  startup.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  startup.hStdError = GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION app;
  /* No application name: CreateProcessW takes the program from the command line's first token,
     as Node's spawn would have (the agent quotes it). No breakaway flag: the app starts in this
     process's job, if any, and is then nested into ours. */
  const DWORD flags = CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT;
  if (account[0] != L'\0') {
    HANDLE token = logon_account(account);
    wchar_t desktop[64];
    make_app_desktop(token, desktop);
    startup.lpDesktop = desktop;
    /* CreateProcessAsUserW needs these two of the caller (LocalSystem holds both). */
    enable_privilege(SE_ASSIGNPRIMARYTOKEN_NAME);
    enable_privilege(SE_INCREASE_QUOTA_NAME);
    if (!CreateProcessAsUserW(token, NULL, command_line, NULL, NULL, TRUE, flags, NULL, NULL, &startup, &app)) {
      fail_for(APP_JOB_EXIT_LAUNCH, L"cannot start the app as", account, GetLastError());
    }
    CloseHandle(token);
  } else if (!CreateProcessW(NULL, command_line, NULL, NULL, TRUE, flags, NULL, NULL, &startup, &app)) {
    fail(APP_JOB_EXIT_LAUNCH, L"cannot start the app", GetLastError());
  }
  if (!AssignProcessToJobObject(job, app.hProcess)) {
    DWORD error = GetLastError();
    TerminateProcess(app.hProcess, APP_JOB_EXIT_ASSIGN);
    fail(APP_JOB_EXIT_ASSIGN, L"cannot put the app in the job object", error);
  }
  if (ResumeThread(app.hThread) == (DWORD)-1) {
    DWORD error = GetLastError();
    TerminateJobObject(job, APP_JOB_EXIT_RESUME);
    fail(APP_JOB_EXIT_RESUME, L"cannot resume the app", error);
  }
  CloseHandle(app.hThread);

  if (WaitForSingleObject(app.hProcess, INFINITE) != WAIT_OBJECT_0) {
    DWORD error = GetLastError();
    TerminateJobObject(job, APP_JOB_EXIT_WAIT);
    fail(APP_JOB_EXIT_WAIT, L"cannot wait for the app", error);
  }
  DWORD code = 0;
  if (!GetExitCodeProcess(app.hProcess, &code)) {
    DWORD error = GetLastError();
    TerminateJobObject(job, APP_JOB_EXIT_WAIT);
    fail(APP_JOB_EXIT_WAIT, L"cannot read the app's exit code", error);
  }
  /* Exiting closes the job handle: whatever the app left running ends with it. */
  ExitProcess(code);
}
