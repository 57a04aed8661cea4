/*
 * job-probe: a stand-in app for the app-job tests under Wine (agent/src/launcher/app-job.wine.test.ts).
 *   job-probe.exe exit <code>             exits with code
 *   job-probe.exe cmdline                 prints its command line and exits 0
 *   job-probe.exe tree <seconds>          prints its parent's pid ("parent <pid>"), starts a grandchild the
 *                                         way CrashReportClient would (trying CREATE_BREAKAWAY_FROM_JOB
 *                                         first), prints what happened, sleeps
 *   job-probe.exe watch <pid> <seconds>   (the grandchild) prints whether it is in a job, then waits for
 *                                         process pid to end, prints "parent gone", and sleeps
 *   job-probe.exe as-agent                stands in for the agent: puts itself in a job made as libuv makes
 *                                         its own (kill on close, silent breakaway allowed), starts the
 *                                         command line in JOB_PROBE_COMMAND_LINE (verbatim) the way libuv
 *                                         starts a child (suspended, assigned to that job, resumed), waits
 *                                         for it and exits with its code
 * Every line ends with \n and is flushed at once: the test reads them as events.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <tlhelp32.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

static void say(const char *format, ...) {
  va_list args;
  va_start(args, format);
  vprintf(format, args);
  va_end(args);
  fflush(stdout);
}

/* The pid of the process that started this one (0 if unknown). */
static DWORD parent_pid(void) {
  DWORD parent = 0;
  HANDLE snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (snapshot == INVALID_HANDLE_VALUE) return 0;
  PROCESSENTRY32W entry;
  entry.dwSize = sizeof entry;
  for (BOOL more = Process32FirstW(snapshot, &entry); more; more = Process32NextW(snapshot, &entry)) {
    if (entry.th32ProcessID == GetCurrentProcessId()) parent = entry.th32ParentProcessID;
  }
  CloseHandle(snapshot);
  return parent;
}

/* Startup info that hands a child this process's standard handles. */
static void with_own_std_handles(STARTUPINFOW *startup) {
  ZeroMemory(startup, sizeof *startup);
  startup->cb = sizeof *startup;
  startup->dwFlags = STARTF_USESTDHANDLES;
  startup->hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  startup->hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  startup->hStdError = GetStdHandle(STD_ERROR_HANDLE);
}

static int start_watcher(DWORD flags, DWORD seconds, DWORD *pid, DWORD *error) {
  wchar_t self[MAX_PATH];
  GetModuleFileNameW(NULL, self, MAX_PATH);
  wchar_t line[MAX_PATH + 64];
  swprintf(line, MAX_PATH + 64, L"\"%ls\" watch %lu %lu", self, GetCurrentProcessId(), seconds);
  STARTUPINFOW startup;
  with_own_std_handles(&startup);
  PROCESS_INFORMATION child;
  if (!CreateProcessW(NULL, line, NULL, NULL, TRUE, flags, NULL, NULL, &startup, &child)) {
    *error = GetLastError();
    return 0;
  }
  *pid = child.dwProcessId;
  CloseHandle(child.hThread);
  CloseHandle(child.hProcess);
  return 1;
}

/* libuv's uv__init_global_job_handle and the non-detached branch of uv_spawn, in short. */
static int as_agent(void) {
  static wchar_t line[32768];
  if (GetEnvironmentVariableW(L"JOB_PROBE_COMMAND_LINE", line, 32768) == 0) {
    say("JOB_PROBE_COMMAND_LINE is not set\n");
    return 2;
  }
  HANDLE job = CreateJobObjectW(NULL, NULL);
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
  ZeroMemory(&limits, sizeof limits);
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_BREAKAWAY_OK | JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK |
                                            JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION | JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (job == NULL || !SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits) ||
      !AssignProcessToJobObject(job, GetCurrentProcess())) {
    say("cannot make the agent's job %lu\n", GetLastError());
    return 3;
  }
  STARTUPINFOW startup;
  with_own_std_handles(&startup);
  PROCESS_INFORMATION child;
  if (!CreateProcessW(NULL, line, NULL, NULL, TRUE, CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT, NULL, NULL, &startup, &child)) {
    say("cannot start %lu\n", GetLastError());
    return 4;
  }
  AssignProcessToJobObject(job, child.hProcess);
  ResumeThread(child.hThread);
  say("agent started the child\n");
  WaitForSingleObject(child.hProcess, INFINITE);
  DWORD code = 0;
  GetExitCodeProcess(child.hProcess, &code);
  return (int)code;
}

int wmain(int argc, wchar_t **argv) {
  if (argc >= 2 && wcscmp(argv[1], L"as-agent") == 0) return as_agent();
  if (argc >= 3 && wcscmp(argv[1], L"exit") == 0) return _wtoi(argv[2]);
  if (argc >= 2 && wcscmp(argv[1], L"cmdline") == 0) {
    say("%ls\n", GetCommandLineW());
    return 0;
  }
  if (argc >= 3 && wcscmp(argv[1], L"tree") == 0) {
    DWORD seconds = (DWORD)_wtoi(argv[2]);
    DWORD pid = 0, error = 0;
    say("parent %lu\n", parent_pid());
    if (start_watcher(CREATE_BREAKAWAY_FROM_JOB, seconds, &pid, &error)) {
      say("breakaway allowed\n");
    } else {
      say("breakaway refused %lu\n", error);
      if (!start_watcher(0, seconds, &pid, &error)) {
        say("cannot start the grandchild %lu\n", error);
        return 3;
      }
    }
    say("grandchild %lu\n", pid);
    Sleep(seconds * 1000);
    return 0;
  }
  if (argc >= 4 && wcscmp(argv[1], L"watch") == 0) {
    DWORD parent = (DWORD)_wtoi(argv[2]);
    DWORD seconds = (DWORD)_wtoi(argv[3]);
    BOOL in_job = FALSE;
    IsProcessInJob(GetCurrentProcess(), NULL, &in_job);
    say("watching, in a job: %s\n", in_job ? "yes" : "no");
    HANDLE handle = OpenProcess(SYNCHRONIZE, FALSE, parent);
    if (handle != NULL) {
      WaitForSingleObject(handle, seconds * 1000);
      say("parent gone\n");
    }
    Sleep(seconds * 1000);
    return 0;
  }
  say("usage: job-probe.exe exit <code> | cmdline | tree <seconds> | watch <pid> <seconds>\n");
  return 2;
}
