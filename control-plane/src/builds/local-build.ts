// A "local build": an Approved build record with no archive, made live for a project. Its app is
// whatever the agents' launcher.command runs (the mock Unreal app in the demo and tests), so the
// streaming path can run before (and without) the build pipeline.
import type { Clock } from '@pixelfleet/common';
import type { IdSource } from '../lib/ids';
import type { BuildsRepository } from '../repositories/builds';
import type { ProjectsRepository } from '../repositories/projects';
import type { EventLog } from '../events/event-log';
import { notFound } from '../errors';

export async function registerLocalBuild(
  deps: { builds: BuildsRepository; projects: ProjectsRepository; events: EventLog; clock: Clock; ids: IdSource },
  projectId: string,
): Promise<string> {
  if (!deps.projects.findById(projectId)) throw notFound(`project ${projectId} not found`);
  const now = deps.clock.now();
  const uploadId = deps.ids.next('upl');
  await deps.builds.insert({ uploadId, projectId, fileUrl: undefined, status: 'Approved', objection: undefined, autoRelease: true, createdAt: now, updatedAt: now });
  deps.projects.setLiveUpload(projectId, uploadId);
  deps.events.record('build.local', { projectId }, { uploadId });
  return uploadId;
}
