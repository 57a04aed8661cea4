// Outbound webhooks: one HTTP POST of the spec's JSON envelope (webhook-envelope.ts) per event, 10 s timeout, no
// retries, never blocking the caller. The target must pass the URL policy at send time too, and
// the connection goes to the addresses that check resolved and passed (DNS is asked once, so a
// rebinding name cannot swap in loopback). Every attempt and its outcome is recorded; the URL
// itself is a shared secret and is never logged.
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import type { WebhookDeliveryFailure } from '../errors';
import type { Clock } from '@pixelfleet/common';
import type { ProjectsRepository } from '../repositories/projects';
import type { WebhookDeliveriesRepository } from '../repositories/webhook-deliveries';
import { checkOutboundUrl, pinnedLookup, type UrlPolicyOptions } from './url-policy';
import type { WebhookEnvelope } from './webhook-envelope';

export interface DeliveryOutcome {
  delivered: boolean;
  statusCode: number | undefined;
  /** Why it failed, for callers (a catalogued sentence each); undefined when delivered. */
  failure: WebhookDeliveryFailure | undefined;
  /** The detail of a failure (socket or TLS error, policy reason): server log and delivery row only, as it can name internal addresses and ports. */
  error: string | undefined;
  durationMs: number;
}

export interface WebhookSenderOptions {
  projects: ProjectsRepository;
  deliveries: WebhookDeliveriesRepository;
  clock: Clock;
  policy: UrlPolicyOptions;
  log: Logger;
  /** Per delivery, connect to last byte of the answer; default 10,000 (spec). */
  timeoutMs?: number;
}

export const WEBHOOK_TIMEOUT_MS = 10_000;

export class WebhookSender {
  private readonly inFlight = new Set<Promise<unknown>>();
  /** The last delivery queued per build (or per project for events of no build): the next one starts after it. */
  private readonly lines = new Map<string, Promise<unknown>>();

  constructor(private readonly options: WebhookSenderOptions) {}

  /**
   * Fires an event of a project to its configured URL, if any and if its filter allows the
   * event. Returns at once; the delivery runs in the background (see idle()). A build's events
   * are delivered one after another, in the order they fired (the receiver sees its stages in
   * order); a slow receiver delays that build's later events, never the pipeline.
   */
  emit(projectId: string, envelope: WebhookEnvelope): void {
    const { url, events } = this.options.projects.webhook(projectId);
    if (url === undefined || (events !== undefined && !events.includes(envelope.event))) return;
    const line = envelope.uploadId ?? `project:${projectId}`;
    const queued = (this.lines.get(line) ?? Promise.resolve()).then(() => this.deliver(projectId, url, envelope));
    this.lines.set(line, queued);
    this.inFlight.add(queued);
    void queued.finally(() => {
      this.inFlight.delete(queued);
      if (this.lines.get(line) === queued) this.lines.delete(line);
    });
  }

  /**
   * One delivery attempt; records it and resolves with its outcome (never rejects) once the record
   * is written, so a build's next delivery (queued behind this one) is recorded after it. A record
   * the store refuses is logged; the outcome still stands.
   */
  deliver(projectId: string, url: string, envelope: WebhookEnvelope): Promise<DeliveryOutcome> {
    const attempt = this.attempt(url, envelope).then(async (outcome) => {
      try {
        await this.options.deliveries.insert({
          projectId,
          event: envelope.event,
          uploadId: envelope.uploadId ?? undefined,
          url,
          statusCode: outcome.statusCode,
          failure: outcome.failure,
          error: outcome.error,
          durationMs: outcome.durationMs,
          attemptedAt: this.options.clock.now() - outcome.durationMs,
        });
      } catch (err) {
        this.options.log.error({ err, projectId, event: envelope.event, uploadId: envelope.uploadId }, 'webhook delivery could not be recorded');
      }
      this.options.log.info({ projectId, event: envelope.event, uploadId: envelope.uploadId, statusCode: outcome.statusCode, error: outcome.error, durationMs: outcome.durationMs }, 'webhook delivery');
      return outcome;
    });
    this.inFlight.add(attempt);
    void attempt.finally(() => this.inFlight.delete(attempt));
    return attempt;
  }

  /** Resolves when every delivery in flight has finished (shutdown lets them finish). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async attempt(url: string, envelope: WebhookEnvelope): Promise<DeliveryOutcome> {
    const started = this.options.clock.now();
    const fail = (failure: WebhookDeliveryFailure, error: string, statusCode?: number): DeliveryOutcome => ({ delivered: false, statusCode, failure, error, durationMs: this.options.clock.now() - started });
    const verdict = await checkOutboundUrl(url, this.options.policy);
    if (!verdict.ok) return fail('refused', `webhook URL refused: ${verdict.reason}`);
    const body = JSON.stringify(envelope);
    return new Promise<DeliveryOutcome>((resolve) => {
      const requestOptions: RequestOptions = {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'Pixelfleet-Webhook/1' },
        // A fresh connection per delivery: a pooled socket would skip this attempt's pinned lookup.
        agent: false,
      };
      if (verdict.addresses !== undefined) requestOptions.lookup = pinnedLookup(verdict.addresses);
      const send = verdict.url.protocol === 'https:' ? httpsRequest : httpRequest;
      let settled = false;
      const finish = (outcome: DeliveryOutcome) => {
        if (settled) return;
        settled = true;
        timer.cancel();
        resolve(outcome);
      };
      const req = send(verdict.url, requestOptions, (res) => {
        res.resume();
        res.on('end', () => {
          const statusCode = res.statusCode ?? 0;
          const ok = statusCode >= 200 && statusCode < 300;
          finish(ok ? { delivered: true, statusCode, failure: undefined, error: undefined, durationMs: this.options.clock.now() - started } : fail('rejected', `receiver answered ${statusCode}`, statusCode));
        });
        res.on('error', (err) => finish(fail('unreachable', err.message, res.statusCode)));
      });
      const timeoutMs = this.options.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
      const timer = this.options.clock.setTimeout(() => {
        finish(fail('timedOut', `timed out after ${timeoutMs} ms`));
        req.destroy();
      }, timeoutMs);
      req.on('error', (err) => finish(fail('unreachable', err.message)));
      req.end(body);
    });
  }
}
