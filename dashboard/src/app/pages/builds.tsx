// A project's builds, newest first, 20 a page: each with its stage timeline (the time each stage was
// entered), the pipeline's progress on the stage it is in (bytes, rate, time left), the objection
// in full, the live build marked; New build from URL, Set Live and Distribute for those who may
// write. Read again every few seconds while shown: stages arrive without a reload.
import { useState } from 'preact/hooks';
import { describeFailure, fieldOfFailure } from '../api';
import { useDashboard } from '../context';
import { formatBytes, formatSeconds, formatTime, isoTime } from '../format';
import { Notice } from '../parts/notice';
import { ProjectNav } from '../parts/project-nav';
import { TextField } from '../parts/text-field';
import { usePolled } from '../polling';
import type { DashboardBuild, DashboardBuilds } from '../../wire';

/** How often the builds are read while the page is shown: a stage lasts seconds to minutes. */
export const BUILDS_REFRESH_MS = 2000;

/** Builds a page shows (the route's default page). */
export const BUILDS_PAGE_SIZE = 20;

/** Statuses a build ends in; the pipeline works on the others. */
const SETTLED = new Set(['Ready', 'Approved', 'Reject', 'Download Failed']);

export function BuildsPage({ projectId }: { projectId: string }) {
  const { api } = useDashboard();
  const [skip, setSkip] = useState(0);
  const path = `/projects/${projectId}/builds?skip=${skip}&limit=${BUILDS_PAGE_SIZE}`;
  const polled = usePolled(() => api.get<DashboardBuilds>(path), BUILDS_REFRESH_MS, [path]);
  const project = polled.data?.project;
  const shown = polled.data?.builds.length ?? 0;
  return (
    <>
      <ProjectNav projectId={projectId} project={project} tab="builds" />
      {polled.error !== undefined && <Notice kind="error">{polled.error}</Notice>}
      {project?.writable === true && (
        <NewBuildForm
          projectId={projectId}
          onSubmitted={() => {
            // The new build is the newest: show the first page.
            if (skip === 0) polled.refresh();
            else setSkip(0);
          }}
        />
      )}
      {polled.data === undefined && polled.error === undefined && <p aria-busy="true">Loading the builds…</p>}
      {polled.data !== undefined && polled.data.builds.length === 0 && <p>No builds yet.</p>}
      {polled.data !== undefined && polled.data.builds.length > 0 && (
        <ol class="build-list" aria-label="Builds, newest first">
          {polled.data.builds.map((build) => (
            <BuildCard key={build.uploadId} projectId={projectId} build={build} writable={project?.writable === true} onChanged={polled.refresh} />
          ))}
        </ol>
      )}
      {polled.data !== undefined && polled.data.total > BUILDS_PAGE_SIZE && (
        <nav class="pager" aria-label="Pages of builds">
          <button type="button" class="button-quiet" disabled={skip === 0} onClick={() => setSkip(Math.max(0, skip - BUILDS_PAGE_SIZE))}>
            Newer
          </button>
          <span>
            {skip + 1}–{skip + shown} of {polled.data.total}
          </span>
          <button type="button" class="button-quiet" disabled={skip + shown >= polled.data.total} onClick={() => setSkip(skip + BUILDS_PAGE_SIZE)}>
            Older
          </button>
        </nav>
      )}
    </>
  );
}

function NewBuildForm({ projectId, onSubmitted }: { projectId: string; onSubmitted: () => void }) {
  const { api } = useDashboard();
  const [fileUrl, setFileUrl] = useState('');
  const [autoRelease, setAutoRelease] = useState(false);
  const [outcome, setOutcome] = useState<{ kind: 'error' | 'success'; text: string; field?: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setOutcome(undefined);
    try {
      const made = await api.post<{ uploadId: string; status: string }>(`/projects/${projectId}/builds`, { fileUrl, autoRelease });
      setOutcome({ kind: 'success', text: `Build ${made.uploadId} submitted: ${made.status}.` });
      setFileUrl('');
      onSubmitted();
    } catch (failure) {
      setOutcome({ kind: 'error', text: describeFailure(failure), field: fieldOfFailure(failure) });
    } finally {
      setBusy(false);
    }
  };

  const fieldError = outcome?.kind === 'error' && outcome.field === 'fileUrl' ? outcome.text : undefined;
  return (
    <section class="card" aria-labelledby="new-build-heading">
      <h2 id="new-build-heading">New build from URL</h2>
      <form onSubmit={(event) => void submit(event)}>
        <TextField
          label="Download URL of the build's .zip"
          type="url"
          required
          maxLength={2048}
          hint="A direct HTTPS download on a public address (a presigned storage link works). One build call per two minutes."
          value={fileUrl}
          onInput={setFileUrl}
          error={fieldError}
        />
        <div class="field checkbox">
          <label>
            <input type="checkbox" checked={autoRelease} onChange={(event) => setAutoRelease(event.currentTarget.checked)} /> Distribute it to the streaming servers as soon as it is saved
          </label>
        </div>
        {outcome !== undefined && fieldError === undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
        <button type="submit" disabled={busy}>
          Submit build
        </button>
      </form>
    </section>
  );
}

function BuildCard({ projectId, build, writable, onChanged }: { projectId: string; build: DashboardBuild; writable: boolean; onChanged: () => void }) {
  const { api } = useDashboard();
  const [outcome, setOutcome] = useState<{ kind: 'error' | 'success'; text: string } | undefined>(undefined);
  const act = (action: 'set-live' | 'distribute') => {
    setOutcome(undefined);
    api.post<{ status: string }>(`/projects/${projectId}/builds/${build.uploadId}/${action}`).then(
      (answer) => {
        setOutcome({ kind: 'success', text: action === 'set-live' ? `Going live: ${answer.status}.` : `Distributing: ${answer.status}.` });
        onChanged();
      },
      (failure: unknown) => setOutcome({ kind: 'error', text: describeFailure(failure) }),
    );
  };
  const headingId = `build-${build.uploadId}`;
  return (
    <li class="card build" aria-labelledby={headingId}>
      <h2 id={headingId}>
        <code>{build.uploadId}</code> <span class={`badge ${statusTone(build.status)}`}>{build.status}</span>
        {build.live && <span class="badge badge-live">Live</span>}
      </h2>
      <p class="muted">
        Submitted <time dateTime={isoTime(build.createdAt)}>{formatTime(build.createdAt)}</time>
        {build.autoRelease ? ', distributed automatically once saved' : ''}
      </p>
      {build.fileUrl !== null && <p class="file-url">{build.fileUrl}</p>}
      {build.objection !== null && (
        <p class="objection" role="note">
          <strong>Why:</strong> {build.objection}
        </p>
      )}
      <ol class="stages" aria-label={`Stages of ${build.uploadId}`}>
        {build.stages.map((stage, index) => {
          const next = build.stages[index + 1];
          const current = next === undefined && !SETTLED.has(stage.status);
          return (
            <li key={`${stage.status}-${stage.enteredAt}`} class={current ? 'stage-current' : undefined} aria-current={current ? 'step' : undefined}>
              <span class="stage-name">{stage.status}</span> <time dateTime={isoTime(stage.enteredAt)}>{formatTime(stage.enteredAt)}</time>
              {next !== undefined && <span class="muted"> ({formatSeconds((next.enteredAt - stage.enteredAt) / 1000)})</span>}
              {current && build.progress !== null && <Progress progress={build.progress} />}
            </li>
          );
        })}
      </ol>
      {writable && build.activatable && (
        <p class="actions">
          {!build.live && (
            <button type="button" onClick={() => act('set-live')}>
              Set Live
            </button>
          )}{' '}
          <button type="button" class="button-quiet" onClick={() => act('distribute')}>
            Distribute
          </button>
        </p>
      )}
      {outcome !== undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
    </li>
  );
}

function Progress({ progress }: { progress: NonNullable<DashboardBuild['progress']> }) {
  const parts = [progress.totalBytes === null ? formatBytes(progress.bytes) : `${formatBytes(progress.bytes)} of ${formatBytes(progress.totalBytes)}`];
  if (progress.bytesPerSecond !== null) parts.push(`${formatBytes(progress.bytesPerSecond)}/s`);
  if (progress.etaSeconds !== null) parts.push(`${formatSeconds(progress.etaSeconds)} left`);
  return (
    <div class="progress">
      {progress.totalBytes !== null && progress.totalBytes > 0 && <progress max={progress.totalBytes} value={progress.bytes} aria-label={`${progress.status} progress`} />}
      <span data-testid="build-progress">{parts.join(' · ')}</span>
    </div>
  );
}

function statusTone(status: string): string {
  if (status === 'Approved' || status === 'Ready') return 'badge-good';
  if (status === 'Reject' || status === 'Download Failed') return 'badge-bad';
  return '';
}
