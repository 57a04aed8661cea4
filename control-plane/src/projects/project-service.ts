// Projects' domain behind the API: the owner's project list, settings (read, and a parsed patch
// applied after the merged check and the webhook URL policy), enable/disable (disable ends the
// project's sessions), and the webhook test. The routes authorize first and call in here.
import { ApiError } from '../errors';
import type { EventLog } from '../events/event-log';
import type { Clock } from '@pixelfleet/common';
import type { Project, ProjectsRepository, ProjectWebhook } from '../repositories/projects';
import { checkOutboundUrl, type UrlPolicyOptions } from '../webhooks/url-policy';
import { testEventEnvelope } from '../webhooks/webhook-envelope';
import type { DeliveryOutcome, WebhookSender } from '../webhooks/webhook-sender';
import type { ProjectSettings } from './project-settings';
import { invalidSetting, type SettingsPatch } from './settings-patch';

export interface ProjectServiceDeps {
  projects: ProjectsRepository;
  /** Ends a disabled project's sessions (the session service). */
  sessions: {
    endProjectSessions(projectId: string, cause: 'projectDisabled'): unknown;
    /** The project's warm pool settings changed (or it was enabled): its pool is tended now, its failures forgotten. */
    warmPoolSettingsChanged(projectId: string): void;
  };
  events: EventLog;
  webhooks: Pick<WebhookSender, 'deliver'>;
  /** The outbound URL policy a webhook URL must pass. */
  urlPolicy: UrlPolicyOptions;
  clock: Clock;
}

/** The settings of a project's warm pool: saving any of them re-reads the pools and warms a stopped build again. */
const WARM_POOL_FIELDS: ReadonlySet<string> = new Set<keyof ProjectSettings>(['warmPoolMinIdle', 'warmPoolQueueWaitTargetSeconds', 'warmInstanceMaxAgeMinutes']);

export class ProjectService {
  constructor(private readonly deps: ProjectServiceDeps) {}

  /** The projects `userId` owns (spec: projects-status), not those shared with them. */
  listOwned(userId: string): Project[] {
    return this.deps.projects.listByOwner(userId);
  }

  /** The project and its webhook (404 `Project not found` when it is gone). */
  settings(projectId: string): { project: Project; webhook: ProjectWebhook } {
    const project = this.deps.projects.findById(projectId);
    if (!project) throw new ApiError('projectNotFound');
    return { project, webhook: this.deps.projects.webhook(projectId) };
  }

  /**
   * Enables or disables the project; idempotent (an unchanged status records no event). Disabling
   * ends every session of the project that is not already ending, however old.
   */
  setEnabled(project: Project, enabled: boolean, by: string): void {
    if (project.enabled !== enabled) {
      this.deps.projects.setEnabled(project.projectId, enabled);
      this.deps.events.record(enabled ? 'project.enabled' : 'project.disabled', { projectId: project.projectId }, { userId: by });
    }
    if (!enabled) this.deps.sessions.endProjectSessions(project.projectId, 'projectDisabled');
    else if (!project.enabled) this.deps.sessions.warmPoolSettingsChanged(project.projectId);
  }

  /**
   * Applies a parsed patch: the merged settings must keep minBitrate ≤ maxBitrate and a new webhook
   * URL must pass the URL policy (400 each), then everything is written; the same patch twice
   * leaves the same settings. Returns the settings as stored.
   */
  async updateSettings(project: Project, patch: SettingsPatch, by: string): Promise<{ project: Project; webhook: ProjectWebhook }> {
    const { projectId } = project;
    const settings: ProjectSettings = { ...project.settings, ...patch.settings };
    if (settings.minBitrate > settings.maxBitrate) throw invalidSetting(`Invalid field: minBitrate (${settings.minBitrate}) must not exceed maxBitrate (${settings.maxBitrate})`);
    if (typeof patch.webhookUrl === 'string') {
      const verdict = await checkOutboundUrl(patch.webhookUrl, this.deps.urlPolicy);
      if (!verdict.ok) throw invalidSetting(`Invalid field: webhookUrl ${verdict.reason}`);
    }
    const webhook = this.deps.projects.webhook(projectId);
    if (patch.webhookUrl !== undefined || patch.webhookEvents !== undefined) {
      this.deps.projects.setWebhook(projectId, {
        url: patch.webhookUrl === undefined ? webhook.url : (patch.webhookUrl ?? undefined),
        events: patch.webhookEvents === undefined ? webhook.events : (patch.webhookEvents ?? undefined),
      });
    }
    if (patch.name !== undefined) this.deps.projects.setName(projectId, patch.name);
    this.deps.projects.setSettings(projectId, settings);
    this.deps.events.record('project.settings', { projectId }, { userId: by, fields: patch.fields });
    if (patch.fields.some((field) => WARM_POOL_FIELDS.has(field))) this.deps.sessions.warmPoolSettingsChanged(projectId);
    return this.settings(projectId);
  }

  /** Sends `webhook.test` to the project's URL (404 when none is set) and waits for the outcome. */
  testWebhook(projectId: string): Promise<DeliveryOutcome> {
    const { url } = this.deps.projects.webhook(projectId);
    if (url === undefined) throw new ApiError('webhookNotConfigured');
    return this.deps.webhooks.deliver(projectId, url, testEventEnvelope(this.deps.clock.now()));
  }
}
