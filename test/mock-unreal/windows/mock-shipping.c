/*
 * The binaries of a Windows-packaged mock Unreal build (test/support/windows-build.ts), built with
 * mingw-w64 so that the agent launches a real Windows program and the app is a Windows process
 * tree as a real game's is: this exe, the mock app (Windows node.exe running the bundled mock
 * Unreal app) as its child, and the app's own helper (-MockHelperProcess, as CrashReportClient).
 *
 * Compiled twice from this file:
 *   <Project>/Binaries/Win64/<Project>-Win64-Shipping.exe (default): starts
 *     "<its folder>\MockApp\node.exe" "<its folder>\MockApp\mock-unreal.mjs" <its own arguments>
 *     with the command line after its own name passed on unchanged (Unreal parses its command line
 *     itself), its standard handles, environment and current folder inherited; waits for it and
 *     exits with its code. It starts no job of its own: the app-job launcher's job holds both.
 *   <Name>.exe at the root (-DMOCK_BOOTSTRAP): UE's bootstrap, which the agent never launches;
 *     starts "<its folder>\<Name>\Binaries\Win64\<Name>-Win64-Shipping.exe" <Name> <its arguments>
 *     as UE's does, <Name> being its own file name without ".exe".
 *
 * Exit: the child's code; 90 with one stderr line when the child cannot be started.
 */
#define UNICODE
#define _UNICODE
#define WIN32_LEAN_AND_MEAN
#include <windows.h>

#define LINE_CHARS 32768

static void fail(const wchar_t *what, DWORD error) {
  wchar_t line[1024];
  wsprintfW(line, L"mock-shipping: %ls (Windows error %lu)\r\n", what, error);
  char utf8[2048];
  int bytes = WideCharToMultiByte(CP_UTF8, 0, line, -1, utf8, (int)sizeof utf8, NULL, NULL);
  DWORD written;
  if (bytes > 1) WriteFile(GetStdHandle(STD_ERROR_HANDLE), utf8, (DWORD)(bytes - 1), &written, NULL);
  ExitProcess(90);
}

/* The command line after this program's own name (CreateProcess's rule for argv[0]). */
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
  static wchar_t self[MAX_PATH], folder[MAX_PATH], command_line[LINE_CHARS];
  DWORD n = GetModuleFileNameW(NULL, self, MAX_PATH);
  if (n == 0 || n >= MAX_PATH) fail(L"cannot read its own path", GetLastError());
  lstrcpyW(folder, self);
  wchar_t *slash = folder + lstrlenW(folder);
  while (slash > folder && *slash != L'\\') slash--;
  *slash = L'\0';
  const wchar_t *rest = after_program_name(GetCommandLineW());
#ifdef MOCK_BOOTSTRAP
  wchar_t *name = self + (slash - folder) + 1;
  wchar_t *dot = name + lstrlenW(name);
  while (dot > name && *dot != L'.') dot--;
  if (dot > name) *dot = L'\0';
  if (lstrlenW(folder) * 2 + lstrlenW(name) * 3 + lstrlenW(rest) + 64 >= LINE_CHARS) fail(L"command line too long", ERROR_BUFFER_OVERFLOW);
  wsprintfW(command_line, L"\"%ls\\%ls\\Binaries\\Win64\\%ls-Win64-Shipping.exe\" %ls %ls", folder, name, name, name, rest);
#else
  if (lstrlenW(folder) * 2 + lstrlenW(rest) + 64 >= LINE_CHARS) fail(L"command line too long", ERROR_BUFFER_OVERFLOW);
  wsprintfW(command_line, L"\"%ls\\MockApp\\node.exe\" \"%ls\\MockApp\\mock-unreal.mjs\" %ls", folder, folder, rest);
#endif
  STARTUPINFOW startup;
  ZeroMemory(&startup, sizeof startup);
  startup.cb = sizeof startup;
  startup.dwFlags = STARTF_USESTDHANDLES;
  startup.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  startup.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  startup.hStdError = GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION child;
  if (!CreateProcessW(NULL, command_line, NULL, NULL, TRUE, CREATE_UNICODE_ENVIRONMENT, NULL, NULL, &startup, &child)) fail(L"cannot start the app", GetLastError());
  CloseHandle(child.hThread);
  WaitForSingleObject(child.hProcess, INFINITE);
  DWORD code = 0;
  GetExitCodeProcess(child.hProcess, &code);
  ExitProcess(code);
}
