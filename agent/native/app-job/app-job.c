/*
 * app-job: runs one app in a Windows job object of its own, so that when this launcher dies (the
 * agent died and libuv's kill-on-close job took the launcher with it) the OS ends the whole app
 * tree, including the children the app started, which libuv's own job lets break away.
 *
 * Usage: app-job.exe <app command line>
 * Everything after this program's own name on its command line is the app's command line,
 * passed to CreateProcessW unchanged (Unreal parses its command line itself; see
 * agent/src/launcher/app-job.ts, which builds it). The app inherits the launcher's standard
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
 * Exit: the app's exit code; otherwise one of the APP_JOB_EXIT_* codes below with one line
 * "app-job: <what failed>[: <system message> (Windows error <n>)]" on stderr. The codes fit in a
 * byte (Wine passes only the low 8 bits to Linux, and the tests run there); the stderr line tells
 * them from an app's own. agent/src/launcher/app-job.ts reads them (APP_JOB_EXIT_CODES; a test
 * compares the two).
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#define APP_JOB_EXIT_USAGE 240
#define APP_JOB_EXIT_CREATE_JOB 241
#define APP_JOB_EXIT_LIMIT_JOB 242
#define APP_JOB_EXIT_LAUNCH 243
#define APP_JOB_EXIT_ASSIGN 244
#define APP_JOB_EXIT_RESUME 245
#define APP_JOB_EXIT_WAIT 246

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

int main(void) {
  const wchar_t *app_line = after_program_name(GetCommandLineW());
  if (*app_line == L'\0') fail(APP_JOB_EXIT_USAGE, L"no app command line given (usage: app-job.exe <app command line>)", ERROR_SUCCESS);

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
  if (!CreateProcessW(NULL, command_line, NULL, NULL, TRUE, CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT, NULL, NULL, &startup, &app)) {
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
