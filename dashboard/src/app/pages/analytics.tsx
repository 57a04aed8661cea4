// A project's audience over a date window (at most the analytics API's 92 days): how many
// sessions, sessions and median start-up per day (UTC days, as the daily rollups count them) as
// charts, and from where, on what browser, system and device, as bars with their numbers.
import { useState } from 'preact/hooks';
import { useDashboard } from '../context';
import { Notice } from '../parts/notice';
import { ProjectNav } from '../parts/project-nav';
import { TimeChart } from '../parts/time-chart';
import { usePolled } from '../polling';
import type { DashboardAnalytics, DashboardBreakdownEntry, DashboardDay } from '../../wire';

const DAY_MS = 86_400_000;
const TITLES: Record<keyof DashboardAnalytics['breakdowns'], string> = { country: 'Countries', city: 'Cities', browser: 'Browsers', os: 'Operating systems', device: 'Devices' };
/** Values each breakdown shows; the rest are summed as "Others". */
const SHOWN = 8;

function dayOf(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

export function AnalyticsPage({ projectId }: { projectId: string }) {
  const { api } = useDashboard();
  const [from, setFrom] = useState(() => dayOf(Date.now() - 29 * DAY_MS));
  const [to, setTo] = useState(() => dayOf(Date.now()));
  const [query, setQuery] = useState({ from, to });
  const fromMs = new Date(`${query.from}T00:00:00`).getTime();
  const toMs = new Date(`${query.to}T00:00:00`).getTime() + DAY_MS - 1;
  const path = `/projects/${projectId}/analytics?from=${fromMs}&to=${toMs}`;
  const polled = usePolled(() => api.get<DashboardAnalytics>(path), 60_000, [path]);
  const data = polled.data;
  return (
    <>
      <ProjectNav projectId={projectId} project={data?.project} tab="analytics" />
      <form
        class="filters"
        onSubmit={(event) => {
          event.preventDefault();
          setQuery({ from, to });
        }}
      >
        <div class="field">
          <label for="analytics-from">From</label>
          <input id="analytics-from" type="date" value={from} max={to} onInput={(event) => setFrom(event.currentTarget.value)} required />
        </div>
        <div class="field">
          <label for="analytics-to">To</label>
          <input id="analytics-to" type="date" value={to} min={from} onInput={(event) => setTo(event.currentTarget.value)} required />
        </div>
        <button type="submit">Show</button>
      </form>
      {polled.error !== undefined && <Notice kind="error">{polled.error}</Notice>}
      {data === undefined && polled.error === undefined && <p aria-busy="true">Loading the audience…</p>}
      {data !== undefined && (
        <>
          <p class="total">
            <strong data-testid="analytics-total">{data.total}</strong> {data.total === 1 ? 'session' : 'sessions'} in this window (at most {data.maxDays} days).
          </p>
          <DailyCharts days={data.days} fromMs={data.fromMs} toMs={data.toMs} />
          <div class="breakdowns">
            {(Object.keys(TITLES) as (keyof DashboardAnalytics['breakdowns'])[]).map((dimension) => (
              <Breakdown key={dimension} title={TITLES[dimension]} entries={data.breakdowns[dimension]} total={data.total} />
            ))}
          </div>
        </>
      )}
    </>
  );
}

/** Sessions and median start-up for every UTC day of the window (a day without sessions: 0 and no start-up). */
function DailyCharts({ days, fromMs, toMs }: { days: DashboardDay[]; fromMs: number; toMs: number }) {
  const byDay = new Map(days.map((d) => [d.dayStartMs, d]));
  const times: number[] = [];
  for (let day = Math.floor(fromMs / DAY_MS) * DAY_MS; day <= toMs; day += DAY_MS) times.push(day);
  const sessions = { label: 'Sessions', values: times.map((t) => byDay.get(t)?.sessions ?? 0) };
  const startupSeconds = (t: number) => {
    const ms = byDay.get(t)?.medianStartupMs ?? null;
    return ms === null ? null : ms / 1000;
  };
  const startup = { label: 'Median start-up', values: times.map(startupSeconds) };
  return (
    <div class="charts">
      <TimeChart title="Sessions per day (UTC days)" unit="sessions" times={times} series={[sessions]} />
      <TimeChart title="Median start-up per day (UTC days)" unit="s" times={times} series={[startup]} />
    </div>
  );
}

function Breakdown({ title, entries, total }: { title: string; entries: DashboardBreakdownEntry[]; total: number }) {
  const shown = entries.slice(0, SHOWN);
  const rest = entries.slice(SHOWN);
  if (rest.length > 0) {
    const count = rest.reduce((sum, e) => sum + e.count, 0);
    shown.push({ value: `Others (${rest.length})`, count, percentage: total === 0 ? 0 : Math.round((count / total) * 1000) / 10 });
  }
  const id = `breakdown-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <section class="card breakdown" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {shown.length === 0 ? (
        <p>No sessions.</p>
      ) : (
        <ul class="bars">
          {shown.map((e) => (
            <li key={e.value}>
              <span class="bar-label">{e.value}</span>
              <span class="bar-track" aria-hidden="true">
                <span class="bar" style={{ width: `${Math.max(1, e.percentage)}%` }} />
              </span>
              <span class="bar-value">
                {e.count} ({e.percentage}%)
              </span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
