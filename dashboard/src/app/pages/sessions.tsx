// A project's sessions, newest first: filters by date window, status, what the viewer got (the
// diagnosis), country and browser (the choices are the window's audience, from the analytics
// route), a page at a time, each with its times; the session page from each. Past 10,000 matches
// the count says "more than" and the pages stop: the filters narrow it. Above them, the project's
// warm pool when it has one: here, where a customer looks when viewers wait, read as often.
import { useState } from 'preact/hooks';
import { describeFailure } from '../api';
import { useDashboard } from '../context';
import { DIAGNOSIS_WORDS, diagnosisWords } from '../diagnosis';
import { formatMs, formatTime, isoTime } from '../format';
import { Fact } from '../parts/fact';
import { Link } from '../parts/link';
import { Notice } from '../parts/notice';
import { ProjectNav } from '../parts/project-nav';
import { usePolled } from '../polling';
import type { DashboardAnalytics, DashboardProjectHeader, DashboardSessions, DashboardWarmPool } from '../../wire';

const STATUSES = ['Enqueued', 'Starting', 'Running', 'Terminating', 'Terminated'];
export const SESSIONS_PAGE_SIZE = 25;
const DAY_MS = 86_400_000;

/** The list's filters as the form holds them ('' : any). */
interface Filters {
  status: string;
  diagnosis: string;
  country: string;
  browser: string;
  from: string;
  to: string;
}
const FILTER_NAMES = ['status', 'diagnosis', 'country', 'browser'] as const;
const NO_FILTERS = { status: '', diagnosis: '', country: '', browser: '' };

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
  const [draft, setDraft] = useState<Filters>(() => ({ ...NO_FILTERS, from: dayOf(Date.now() - 29 * DAY_MS), to: dayOf(Date.now()) }));
  const [skip, setSkip] = useState(0);
  const [query, setQuery] = useState(draft);
  const span = windowOf(query.from, query.to);
  const chosen = Object.fromEntries(FILTER_NAMES.filter((name) => query[name] !== '').map((name) => [name, query[name]]));
  const path = `/projects/${projectId}/sessions?${new URLSearchParams({ ...chosen, from: String(span.fromMs), to: String(span.toMs), skip: String(skip), limit: String(SESSIONS_PAGE_SIZE) }).toString()}`;
  const polled = usePolled(() => api.get<DashboardSessions>(path), 10_000, [path]);
  const data = polled.data;
  // The countries and browsers of the chosen window, for their filters (read once per window).
  const audiencePath = `/projects/${projectId}/analytics?${new URLSearchParams({ from: String(span.fromMs), to: String(span.toMs) }).toString()}`;
  const audience = usePolled(() => api.get<DashboardAnalytics>(audiencePath), undefined, [audiencePath]).data;
  const choicesOf = (dimension: 'country' | 'browser') => {
    const values = (audience?.breakdowns[dimension] ?? []).map((e) => e.value);
    return draft[dimension] === '' || values.includes(draft[dimension]) ? values : [draft[dimension], ...values];
  };
  const set = (name: keyof Filters) => (event: { currentTarget: { value: string } }) => setDraft({ ...draft, [name]: event.currentTarget.value });
  const lastShown = skip + (data?.sessions.length ?? 0);

  return (
    <>
      <ProjectNav projectId={projectId} project={data?.project} tab="sessions" />
      {data !== undefined && data.warmPool !== null && <WarmPoolPanel projectId={projectId} project={data.project} pool={data.warmPool} onChanged={polled.refresh} />}
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setSkip(0);
          setQuery(draft);
        }}
      >
        <FilterSelect id="filter-status" label="Status" any="Any" value={draft.status} onChange={set('status')} choices={STATUSES.map((value) => ({ value, label: value }))} />
        <FilterSelect
          id="filter-diagnosis"
          label="What the viewer got"
          any="Anything"
          value={draft.diagnosis}
          onChange={set('diagnosis')}
          choices={Object.entries(DIAGNOSIS_WORDS).map(([value, words]) => ({ value, label: words.label }))}
        />
        <FilterSelect id="filter-country" label="Country" any="Any" value={draft.country} onChange={set('country')} choices={choicesOf('country').map((value) => ({ value, label: value }))} />
        <FilterSelect id="filter-browser" label="Browser" any="Any" value={draft.browser} onChange={set('browser')} choices={choicesOf('browser').map((value) => ({ value, label: value }))} />
        <div class="field">
          <label for="filter-from">From</label>
          <input id="filter-from" type="date" value={draft.from} max={draft.to} onInput={set('from')} required />
        </div>
        <div class="field">
          <label for="filter-to">To</label>
          <input id="filter-to" type="date" value={draft.to} min={draft.from} onInput={set('to')} required />
        </div>
        <button type="submit">Show sessions</button>
      </form>
      {polled.error !== undefined && <Notice kind="error">{polled.error}</Notice>}
      {data === undefined && polled.error === undefined && <p aria-busy="true">Loading the sessions…</p>}
      {data !== undefined && data.total === 0 && <p>No sessions match in this window.</p>}
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
              {skip + 1}–{lastShown} of {data.totalExact ? data.total.toLocaleString() : `more than ${data.total.toLocaleString()}`}
            </span>
            <button type="button" class="button-quiet" disabled={lastShown >= data.total} onClick={() => setSkip(skip + SESSIONS_PAGE_SIZE)}>
              Older
            </button>
          </nav>
          {!data.totalExact && lastShown >= data.total && <p class="muted">The list stops here: narrow the window or add a filter to see older sessions.</p>}
        </>
      )}
    </>
  );
}

/**
 * The warm pool: what is loaded, loading and wanted, how viewers were served, and, when the live
 * build stopped being warmed after its instances kept failing, why and what brings it back (a new
 * build, or the pool settings saved again: the button saves the minimum as it is, since the
 * settings form sends only what changed).
 */
function WarmPoolPanel({ projectId, project, pool, onChanged }: { projectId: string; project: DashboardProjectHeader; pool: DashboardWarmPool; onChanged: () => void }) {
  const { api } = useDashboard();
  const [error, setError] = useState<string | undefined>(undefined);
  const [retrying, setRetrying] = useState(false);
  const retry = () => {
    setRetrying(true);
    setError(undefined);
    api.patch(`/projects/${projectId}/settings`, { warmPoolMinIdle: pool.minIdle }).then(
      () => {
        setRetrying(false);
        onChanged();
      },
      (failure: unknown) => {
        setRetrying(false);
        setError(describeFailure(failure));
      },
    );
  };
  const grown = pool.wanted > pool.minIdle;
  return (
    <section class="card" aria-labelledby="warm-pool-heading">
      <h2 id="warm-pool-heading">Warm pool</h2>
      <p class="muted">Apps started before any viewer comes, so a viewer sees the stream without waiting for the app to load. Each holds a streaming slot; the pool fills from free slots, never ahead of a viewer waiting for one.</p>
      <dl class="facts">
        <Fact term="Ready" testId="warm-ready">{pool.ready}</Fact>
        <Fact term="Starting" testId="warm-starting">{pool.starting}</Fact>
        <Fact term="Wanted" testId="warm-wanted">
          {pool.wanted}
          {grown ? ` (minimum ${pool.minIdle}, grown while viewers waited)` : ''}
        </Fact>
        {pool.ending > 0 && (
          <Fact term="Being stopped" testId="warm-ending">{pool.ending}</Fact>
        )}
        <Fact term="Viewers served warm" testId="warm-claims">{pool.claims}</Fact>
        <Fact term="Viewers who waited for a launch" testId="warm-misses">{pool.misses}</Fact>
      </dl>
      <p class="muted">Viewers are counted since Pixelfleet last restarted.</p>
      {pool.stopped !== null && pool.minIdle > 0 && (
        <>
          <Notice kind="error">
            Build <code>{pool.stopped.uploadId}</code> is no longer warmed: its warm instances failed {pool.stopped.failures} times in a row (the last: {pool.stopped.reason}). Until it is warmed again, every viewer waits for the app to launch.
          </Notice>
          <p>
            Fix the app and <Link to={`/projects/${projectId}/builds`}>upload a new build</Link>, or warm this build again with the button below (changing a warm pool <Link to={`/projects/${projectId}/settings`}>setting</Link> does the same).
            {!project.writable && ' Only someone with full access to the project can.'}
          </p>
          {error !== undefined && <Notice kind="error">{error}</Notice>}
          {project.writable && (
            <button type="button" disabled={retrying} onClick={retry}>
              {retrying ? 'Warming again…' : 'Warm this build again'}
            </button>
          )}
        </>
      )}
    </section>
  );
}

/** One filter of the list: a labelled select whose first choice ('') is "any". */
function FilterSelect(props: { id: string; label: string; any: string; value: string; onChange: (event: { currentTarget: { value: string } }) => void; choices: { value: string; label: string }[] }) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} value={props.value} onChange={props.onChange}>
        <option value="">{props.any}</option>
        {props.choices.map((choice) => (
          <option key={choice.value} value={choice.value}>
            {choice.label}
          </option>
        ))}
      </select>
    </div>
  );
}
