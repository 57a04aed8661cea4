// One session: its timeline (queue wait, start-up, lifetime), what the viewer got in plain words,
// the player's telemetry over time as charts (frames per second, bitrate, round-trip time, packets
// lost, frames dropped), the page's events, the engine's log files (the end to read, the whole to
// download), and End session for those who may write.
import { useMemo, useState } from 'preact/hooks';
import { describeFailure } from '../api';
import { useDashboard } from '../context';
import { diagnosisWords } from '../diagnosis';
import { formatBytes, formatMs, formatTime, isoTime } from '../format';
import { Fact } from '../parts/fact';
import { Link } from '../parts/link';
import { Notice } from '../parts/notice';
import { ProjectNav } from '../parts/project-nav';
import { TimeChart } from '../parts/time-chart';
import { usePolled } from '../polling';
import type { DashboardSessionDetail } from '../../wire';

/** Running sessions are read again this often; an ended one is not read again. */
export const SESSION_REFRESH_MS = 5000;

export function SessionPage({ projectId, sessionId }: { projectId: string; sessionId: string }) {
  const { api } = useDashboard();
  const polled = usePolled(() => api.get<DashboardSessionDetail>(`/projects/${projectId}/sessions/${sessionId}`), SESSION_REFRESH_MS, [projectId, sessionId]);
  const data = polled.data;
  return (
    <>
      <ProjectNav projectId={projectId} project={data?.project} tab="sessions" />
      <p>
        <Link to={`/projects/${projectId}/sessions`}>All sessions</Link>
      </p>
      <h2 class="session-heading">
        Session <code>{sessionId}</code>
      </h2>
      {polled.error !== undefined && <Notice kind="error">{polled.error}</Notice>}
      {data === undefined && polled.error === undefined && <p aria-busy="true">Loading the session…</p>}
      {data !== undefined && (
        <>
          <Summary data={data} projectId={projectId} onEnded={polled.refresh} />
          <Charts data={data} />
          <Events data={data} />
          <LogFiles data={data} projectId={projectId} />
        </>
      )}
      <p class="muted">Times are in your time zone ({Intl.DateTimeFormat().resolvedOptions().timeZone}).</p>
    </>
  );
}

function Summary({ data, projectId, onEnded }: { data: DashboardSessionDetail; projectId: string; onEnded: () => void }) {
  const { api } = useDashboard();
  const [outcome, setOutcome] = useState<{ kind: 'error' | 'success'; text: string } | undefined>(undefined);
  const s = data.session;
  const words = diagnosisWords(s.diagnosis);
  const ended = s.status === 'Terminated' || s.status === 'Terminating';
  return (
    <section class="card" aria-labelledby="summary-heading">
      <h3 id="summary-heading">What happened</h3>
      <p class={`verdict verdict-${words.tone}`}>
        <strong>{words.label}.</strong> {words.explanation}
      </p>
      <dl class="facts">
        <Fact term="Status">{s.status}{s.endReason !== null ? ` (${s.endReason})` : ''}</Fact>
        <Fact term="Queue wait">{formatMs(s.queueWaitMs)}</Fact>
        <Fact term="Start-up">
          {formatMs(s.startupMs)}
          {s.launchMs !== null && s.negotiationMs !== null ? ` (app ${formatMs(s.launchMs)}, connection ${formatMs(s.negotiationMs)})` : ''}
          {s.servedWarm ? ' · served warm: the app was already running' : ''}
        </Fact>
        <Fact term="Length">{formatMs(s.lifetimeMs)}</Fact>
        <Fact term="Viewer">{[s.browser, s.os, s.deviceType].filter(Boolean).join(', ') || '—'}</Fact>
        <Fact term="Place">{[s.city, s.country].filter(Boolean).join(', ') || '—'}</Fact>
      </dl>
      <ol class="timeline" aria-label="Status timeline">
        {data.timeline.map((step, index) => (
          <li key={`${step.status}-${index}`}>
            <span class="stage-name">{step.status}</span> <time dateTime={isoTime(step.at)}>{formatTime(step.at)}</time>
          </li>
        ))}
      </ol>
      {outcome !== undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
      {data.project.writable && !ended && (
        <button
          type="button"
          class="button-danger"
          onClick={() => {
            api.post<{ status: string }>(`/projects/${projectId}/sessions/${s.sessionId}/end`).then(
              (answer) => {
                setOutcome({ kind: 'success', text: `Ending the session: ${answer.status}.` });
                onEnded();
              },
              (failure: unknown) => setOutcome({ kind: 'error', text: describeFailure(failure) }),
            );
          }}
        >
          End session
        </button>
      )}
    </section>
  );
}

function Charts({ data }: { data: DashboardSessionDetail }) {
  const charts = useMemo(() => {
    const times = data.stats.map((p) => p.at);
    const column = (pick: (p: DashboardSessionDetail['stats'][number]) => number | null) => data.stats.map(pick);
    return {
      times,
      fps: [{ label: 'Frames per second', values: column((p) => p.fps) }],
      bitrate: [{ label: 'Bitrate', values: column((p) => p.bitrateKbps === null ? null : p.bitrateKbps / 1000) }],
      rtt: [{ label: 'Round-trip time', values: column((p) => p.rttMs) }],
      losses: [
        { label: 'Packets lost (total)', values: column((p) => p.packetsLost) },
        { label: 'Frames dropped (total)', values: column((p) => p.framesDropped) },
      ],
    };
  }, [data.stats]);
  return (
    <section class="card" aria-labelledby="charts-heading">
      <h3 id="charts-heading">The player's telemetry</h3>
      {data.stats.length === 0 ? (
        <p>The player sent no statistics for this session.</p>
      ) : (
        <>
          {data.statsTotal > data.stats.length && (
            <p class="muted">
              The newest {data.stats.length} of {data.statsTotal} statistics rows.
            </p>
          )}
          <div class="charts">
            <TimeChart title="Frames per second" unit="fps" times={charts.times} series={charts.fps} />
            <TimeChart title="Bitrate" unit="Mbit/s" times={charts.times} series={charts.bitrate} />
            <TimeChart title="Round-trip time" unit="ms" times={charts.times} series={charts.rtt} />
            <TimeChart title="Packets lost and frames dropped" unit="count" times={charts.times} series={charts.losses} />
          </div>
        </>
      )}
    </section>
  );
}

function Events({ data }: { data: DashboardSessionDetail }) {
  return (
    <section class="card" aria-labelledby="events-heading">
      <h3 id="events-heading">The player's events</h3>
      {data.events.length === 0 ? (
        <p>None.</p>
      ) : (
        <ol class="events-list">
          {data.events.map((e, index) => (
            <li key={`${e.at}-${index}`}>
              <time dateTime={isoTime(e.at)}>{formatTime(e.at)}</time> <code>{e.event}</code>
              {e.detail !== null && <span class="muted"> {e.detail}</span>}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

function LogFiles({ data, projectId }: { data: DashboardSessionDetail; projectId: string }) {
  const { api, router } = useDashboard();
  const [shown, setShown] = useState<{ logFileId: string; text: string; truncated: boolean } | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  return (
    <section class="card" aria-labelledby="logs-heading">
      <h3 id="logs-heading">Engine log files</h3>
      {data.logFiles.length === 0 ? (
        <p>None uploaded (the agent uploads them when the app exits).</p>
      ) : (
        <ul class="log-files">
          {data.logFiles.map((f) => (
            <li key={f.logFileId}>
              <code>{f.fileName}</code> ({formatBytes(f.fileSize)}, <time dateTime={isoTime(f.uploadedAt)}>{formatTime(f.uploadedAt)}</time>){' '}
              <button
                type="button"
                class="button-small"
                onClick={() => {
                  setError(undefined);
                  api.get<{ text: string; truncated: boolean }>(`/projects/${projectId}/log-files/${f.logFileId}?tail=1`).then(
                    (answer) => setShown({ logFileId: f.logFileId, text: answer.text, truncated: answer.truncated }),
                    (failure: unknown) => setError(describeFailure(failure)),
                  );
                }}
              >
                Show the end of {f.fileName}
              </button>{' '}
              <a href={`${router.basePath}/api/projects/${projectId}/log-files/${f.logFileId}`} download={f.fileName}>
                Download {f.fileName}
              </a>
            </li>
          ))}
        </ul>
      )}
      {error !== undefined && <Notice kind="error">{error}</Notice>}
      {shown !== undefined && (
        <>
          {shown.truncated && <p class="muted">The last 64 KiB of the file:</p>}
          <pre class="log-tail" tabIndex={0} aria-label="End of the log file">
            {shown.text}
          </pre>
        </>
      )}
    </section>
  );
}
