// Every project the person owns or is a member of: access, state, subscription, live and queued
// viewers (read again every few seconds), the share link to copy and an embed snippet.
import { useDashboard } from '../context';
import { CopyButton } from '../parts/copy-button';
import { Fact } from '../parts/fact';
import { Link } from '../parts/link';
import { Notice } from '../parts/notice';
import { usePolled } from '../polling';
import type { DashboardProject } from '../../wire';

/** How often the live numbers are read while the page is visible. */
export const PROJECTS_REFRESH_MS = 5000;

const ACCESS_LABELS: Record<DashboardProject['access'], string> = { owner: 'Owner', FULL: 'Full access', READONLY: 'Read only' };

/** The iframe a customer pastes into their site (web-player README "Embedding"). */
export function embedSnippet(shareUrl: string): string {
  return `<iframe src="${shareUrl}" allow="fullscreen; autoplay" width="1280" height="720"></iframe>`;
}

export function ProjectsPage() {
  const { api } = useDashboard();
  const { data, error } = usePolled(() => api.get<{ projects: DashboardProject[] }>('/projects'), PROJECTS_REFRESH_MS);

  return (
    <>
      <h1>Projects</h1>
      {error !== undefined && <Notice kind="error">{error}</Notice>}
      {data === undefined && error === undefined && <p aria-busy="true">Loading your projects…</p>}
      {data !== undefined && data.projects.length === 0 && <p>
          You have no projects yet. An operator creates them for your account (<code>pixelfleet admin project create</code>), or an owner shares theirs with you.
        </p>}
      {data !== undefined && data.projects.length > 0 && (
        <ul class="project-list">
          {data.projects.map((project) => (
            <ProjectCard key={project.projectId} project={project} />
          ))}
        </ul>
      )}
    </>
  );
}

function ProjectCard({ project }: { project: DashboardProject }) {
  const snippet = embedSnippet(project.shareUrl);
  return (
    <li class="card project" aria-labelledby={`project-${project.projectId}`}>
      <h2 id={`project-${project.projectId}`}>{project.name}</h2>
      <p class="project-links">
        <Link to={`/projects/${project.projectId}/builds`}>Builds</Link> <Link to={`/projects/${project.projectId}/sessions`}>Sessions</Link>{' '}
        <Link to={`/projects/${project.projectId}/settings`}>Settings</Link>
      </p>
      <p class="badges">
        <span class="badge">{ACCESS_LABELS[project.access]}</span>
        <span class={`badge ${project.enabled ? 'badge-good' : 'badge-bad'}`}>{project.enabled ? 'Active' : 'Disabled'}</span>
        <span class={`badge ${project.subscriptionStatus === 'active' ? 'badge-good' : 'badge-bad'}`}>Subscription: {project.subscriptionStatus}</span>
      </p>
      <dl class="facts">
        <Fact term="Watching now" testId="live-viewers">{project.liveUser}</Fact>
        <Fact term="Waiting in queue" testId="queued-viewers">{project.queueUser}</Fact>
        <Fact term="Region">{project.region}</Fact>
        <Fact term="Live build">{project.liveUploadId ?? 'none yet'}</Fact>
        <Fact term="Project ID">
          <code>{project.projectId}</code>
        </Fact>
      </dl>
      <div class="share">
        <h3>Share link</h3>
        <p>
          <a href={project.shareUrl} target="_blank" rel="noopener noreferrer">
            {project.shareUrl}
          </a>{' '}
          <CopyButton text={project.shareUrl} label={`Copy the share link of ${project.name}`} />
        </p>
        <h3>Embed on your site</h3>
        <pre class="snippet">
          <code>{snippet}</code>
        </pre>
        <CopyButton text={snippet} label={`Copy the embed snippet of ${project.name}`} />
      </div>
    </li>
  );
}
