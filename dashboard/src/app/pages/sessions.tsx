// A project's sessions, newest first: status and date window filters, a page at a time, each
// with its times and what the viewer got (the diagnosis); the session page from each.
import { useState } from 'preact/hooks';
import { useDashboard } from '../context';
import { diagnosisWords } from '../diagnosis';
import { formatMs, formatTime, isoTime } from '../format';
import { Link } from '../parts/link';
import { Notice } from '../parts/notice';
import { ProjectNav } from '../parts/project-nav';
import { usePolled } from '../polling';
import type { DashboardSessions } from '../../wire';

const STATUSES = ['Enqueued', 'Starting', 'Running', 'Terminating', 'Terminated'];
export const SESSIONS_PAGE_SIZE = 25;
const DAY_MS = 86_400_000;

/** A date input's value (the viewer's own day) for an instant. */
function dayOf(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** The window a pair of days covers in the viewer's time zone: from the first day's start to the last day's end. */
function windowOf(from: string, to: string): { fromMs: number; toMs: number } {
  const start = new Date(`${from}T00:00:00`).getTime();
  const end = new Date(`${to}T00:00:00`).getTime() + DAY_MS - 1;
  return { fromMs: start, toMs: end };
}

export function SessionsPage({ projectId }: { projectId: string }) {
  const { api } = useDashboard();
  const [status, setStatus] = useState('');
  const [from, setFrom] = useState(() => dayOf(Date.now() - 29 * DAY_MS));
  const [to, setTo] = useState(() => dayOf(Date.now()));
  const [skip, setSkip] = useState(0);
  const [query, setQuery] = useState({ status: '', from, to });
  const span = windowOf(query.from, query.to);
  const path = `/projects/${projectId}/sessions?${new URLSearchParams({ ...(query.status === '' ? {} : { status: query.status }), from: String(span.fromMs), to: String(span.toMs), skip: String(skip), limit: String(SESSIONS_PAGE_SIZE) }).toString()}`;
  const polled = usePolled(() => api.get<DashboardSessions>(path), 10_000, [path]);
  const data = polled.data;

  return (
    <>
      <ProjectNav projectId={projectId} project={data?.project} tab="sessions" />
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setSkip(0);
          setQuery({ status, from, to });
        }}
      >
        <div class="field">
          <label for="filter-status">Status</label>
          <select id="filter-status" value={status} onChange={(event) => setStatus(event.currentTarget.value)}>
            <option value="">Any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-from">From</label>
          <input id="filter-from" type="date" value={from} max={to} onInput={(event) => setFrom(event.currentTarget.value)} required />
        </div>
        <div class="field">
          <label for="filter-to">To</label>
          <input id="filter-to" type="date" value={to} min={from} onInput={(event) => setTo(event.currentTarget.value)} required />
        </div>
        <button type="submit">Show sessions</button>
      </form>
      {polled.error !== undefined && <Notice kind="error">{polled.error}</Notice>}
      {data === undefined && polled.error === undefined && <p aria-busy="true">Loading the sessions…</p>}
      {data !== undefined && data.total === 0 && <p>No sessions in this window.</p>}
      {data !== undefined && data.total > 0 && (
        <>
          <div class="table-scroll">
            <table class="sessions">
              <caption class="visually-hidden">Sessions, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Started</th>
                  <th scope="col">Status</th>
                  <th scope="col">What the viewer got</th>
                  <th scope="col">Queue wait</th>
                  <th scope="col">Start-up</th>
                  <th scope="col">Length</th>
                  <th scope="col">Browser</th>
                  <th scope="col">Country</th>
                </tr>
              </thead>
              <tbody>
                {data.sessions.map((s) => {
                  const words = diagnosisWords(s.diagnosis);
                  return (
                    <tr key={s.sessionId}>
                      <td>
                        <Link to={`/projects/${projectId}/sessions/${s.sessionId}`}>
                          <time dateTime={isoTime(s.createdAt)}>{formatTime(s.createdAt)}</time>
                        </Link>
                      </td>
                      <td>{s.status}</td>
                      <td class={`result-${words.tone}`}>{words.label}</td>
                      <td>{formatMs(s.queueWaitMs)}</td>
                      <td>{formatMs(s.startupMs)}</td>
                      <td>{formatMs(s.lifetimeMs)}</td>
                      <td>{[s.browser, s.os].filter(Boolean).join(' on ') || '—'}</td>
                      <td>{s.country ?? '—'}</td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </div>
          <nav class="pager" aria-label="Pages of sessions">
            <button type="button" class="button-quiet" disabled={skip === 0} onClick={() => setSkip(Math.max(0, skip - SESSIONS_PAGE_SIZE))}>
              Newer
            </button>
            <span>
              {skip + 1}–{skip + data.sessions.length} of {data.total}
            </span>
            <button type="button" class="button-quiet" disabled={skip + data.sessions.length >= data.total} onClick={() => setSkip(skip + SESSIONS_PAGE_SIZE)}>
              Older
            </button>
          </nav>
        </>
      )}
    </>
  );
}
