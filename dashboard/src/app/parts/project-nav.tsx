// The heading and tabs of a project's pages, and the person's access on it (what the page lets
// them do follows it; the server enforces it either way).
import type { DashboardProjectHeader } from '../../wire';
import { Link } from './link';

const ACCESS_WORDS: Record<DashboardProjectHeader['access'], string> = { owner: 'You own this project.', FULL: 'You have full access.', READONLY: 'You have read-only access.' };

export type ProjectTab = 'builds' | 'sessions' | 'analytics' | 'settings' | 'team';

export function ProjectNav({ projectId, project, tab }: { projectId: string; project: DashboardProjectHeader | undefined; tab: ProjectTab }) {
  const tabs: { key: ProjectTab; label: string }[] = [
    { key: 'builds', label: 'Builds' },
    { key: 'sessions', label: 'Sessions' },
    { key: 'analytics', label: 'Audience' },
    { key: 'settings', label: 'Settings' },
    // The team is the owner's to see and change.
    ...(project?.access === 'owner' || tab === 'team' ? [{ key: 'team' as const, label: 'Team' }] : []),
  ];
  return (
    <>
      <p class="crumbs">
        <Link to="/">Projects</Link> / <span>{project?.name ?? projectId}</span>
      </p>
      <h1>
        {project?.name ?? 'Project'}: {tabs.find((t) => t.key === tab)?.label}
      </h1>
      {project !== undefined && (
        <p class="access-line">
          {ACCESS_WORDS[project.access]}
          {project.access !== 'READONLY' && !project.writable && ` Changes are blocked while the subscription is ${project.subscriptionStatus}.`}
          {!project.enabled && ' The project is disabled: viewers cannot start sessions.'}
        </p>
      )}
      <nav class="tabs" aria-label="Project">
        {tabs.map((t) => (
          <Link key={t.key} to={`/projects/${projectId}/${t.key}`} class={t.key === tab ? 'current' : undefined} current={t.key === tab}>
            {t.label}
          </Link>
        ))}
      </nav>
    </>
  );
}
