// A project's settings: every field the API's allow-list has, each refusal shown beside its field
// in the server's words; region and ownership read-only; enable and disable; the webhook (URL, an
// event per checkbox, Test) and its recorded deliveries. READONLY members see the same page with
// nothing to change, and the webhook URL as the API shows it to them.
import { useEffect, useState } from 'preact/hooks';
import { ApiFailure, describeFailure, fieldOfFailure } from '../api';
import { useDashboard } from '../context';
import { formatTime, isoTime } from '../format';
import { Fact } from '../parts/fact';
import { Notice } from '../parts/notice';
import { ProjectNav } from '../parts/project-nav';
import { TextField } from '../parts/text-field';
import { usePolled } from '../polling';
import type { DashboardSettings, DashboardWebhookDelivery, DashboardWebhookTest } from '../../wire';

type Settings = DashboardSettings['settings'];
type Outcome = { kind: 'error' | 'success'; text: string; field?: string | undefined };

/** The number fields, with what each means to a customer. */
const NUMBER_FIELDS: { key: keyof Settings; label: string; hint: string }[] = [
  { key: 'minBitrate', label: 'Minimum bitrate (bits/s)', hint: 'At most the maximum.' },
  { key: 'maxBitrate', label: 'Maximum bitrate (bits/s)', hint: '100 000 to 200 000 000.' },
  { key: 'resX', label: 'Width (pixels)', hint: 'Even, 2 to 7680.' },
  { key: 'resY', label: 'Height (pixels)', hint: 'Even, 2 to 4320.' },
  { key: 'fps', label: 'Frames per second', hint: '1 to 120.' },
  { key: 'maxRunTime', label: 'Longest session (minutes)', hint: '0: no limit.' },
  { key: 'afkTimeout', label: 'Idle timeout (seconds)', hint: 'A viewer who does nothing this long is ended. 0: never.' },
  { key: 'maxConcurrentSessions', label: 'Most sessions at once', hint: '0: as many as the streaming servers allow.' },
  { key: 'warmPoolMinIdle', label: 'Warm instances', hint: 'Apps kept started and ready, so a viewer sees the stream in under a second. Each holds a slot. 0: none.' },
  { key: 'warmPoolQueueWaitTargetSeconds', label: 'Grow the warm pool past a wait of (seconds)', hint: 'A viewer waiting longer than this adds one warm instance; back to the minimum after 10 quiet minutes. 0: never grows.' },
  { key: 'warmInstanceMaxAgeMinutes', label: 'Replace an unused warm instance after (minutes)', hint: '1 to 1440.' },
];

/** How a settings field is edited: numbers as text (the server says what is wrong), lists one per line. */
type Draft = Record<string, string>;

function draftOf(settings: Settings): Draft {
  const draft: Draft = { name: settings.name, codec: settings.codec, launchArgs: settings.launchArgs.join('\n'), embedOrigins: settings.embedOrigins.join('\n') };
  for (const { key } of NUMBER_FIELDS) draft[key] = String(settings[key]);
  return draft;
}

/** The fields the person changed, as the API takes them. */
function changesOf(draft: Draft, settings: Settings): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  if (draft.name !== settings.name) changes.name = draft.name;
  if (draft.codec !== settings.codec) changes.codec = draft.codec;
  for (const { key } of NUMBER_FIELDS) if (draft[key] !== String(settings[key])) changes[key] = draft[key]!.trim() === '' ? draft[key] : Number(draft[key]);
  const lines = (text: string) => text.split('\n').map((line) => line.trim()).filter((line) => line !== '');
  if (lines(draft.launchArgs!).join('\n') !== settings.launchArgs.join('\n')) changes.launchArgs = lines(draft.launchArgs!);
  if (lines(draft.embedOrigins!).join('\n') !== settings.embedOrigins.join('\n')) changes.embedOrigins = lines(draft.embedOrigins!);
  return changes;
}

export function SettingsPage({ projectId }: { projectId: string }) {
  const { api } = useDashboard();
  // Read once (and after each change): a form is not re-read under the person's hands.
  const polled = usePolled(() => api.get<DashboardSettings>(`/projects/${projectId}/settings`), undefined, [projectId]);
  const data = polled.data;
  return (
    <>
      <ProjectNav projectId={projectId} project={data?.project} tab="settings" />
      {polled.error !== undefined && <Notice kind="error">{polled.error}</Notice>}
      {data === undefined && polled.error === undefined && <p aria-busy="true">Loading the settings…</p>}
      {data !== undefined && (
        <>
          <StreamSettings projectId={projectId} data={data} onSaved={polled.refresh} />
          <ProjectState projectId={projectId} data={data} onChanged={polled.refresh} />
          <WebhookSettings projectId={projectId} data={data} onSaved={polled.refresh} />
        </>
      )}
    </>
  );
}

function StreamSettings({ projectId, data, onSaved }: { projectId: string; data: DashboardSettings; onSaved: () => void }) {
  const { api } = useDashboard();
  const [draft, setDraft] = useState(() => draftOf(data.settings));
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const writable = data.project.writable;
  // Taken again only when the stored values changed (this form saved, or someone else did): a
  // re-read after the webhook form saved must not wipe what is being typed here.
  const stored = JSON.stringify(draftOf(data.settings));
  useEffect(() => setDraft(JSON.parse(stored) as Draft), [stored]);
  const set = (key: string) => (value: string) => setDraft((d) => ({ ...d, [key]: value }));
  const fieldError = (key: string) => (outcome?.kind === 'error' && outcome.field === key ? outcome.text : undefined);

  const save = async (event: Event) => {
    event.preventDefault();
    const changes = changesOf(draft, data.settings);
    if (Object.keys(changes).length === 0) {
      setOutcome({ kind: 'success', text: 'Nothing has changed.' });
      return;
    }
    try {
      await api.patch(`/projects/${projectId}/settings`, changes);
      setOutcome({ kind: 'success', text: 'Settings saved. New sessions use them.' });
      onSaved();
    } catch (failure) {
      setOutcome({ kind: 'error', text: describeFailure(failure), field: fieldOfFailure(failure) });
    }
  };

  return (
    <section class="card" aria-labelledby="stream-heading">
      <h2 id="stream-heading">Streaming</h2>
      <dl class="facts">
        <Fact term="Project ID">
          <code>{data.settings.projectId}</code>
        </Fact>
        <Fact term="Region">{data.settings.region}</Fact>
        <Fact term="Your access">{data.project.access === 'owner' ? 'Owner' : data.project.access === 'FULL' ? 'Full access' : 'Read only'}</Fact>
      </dl>
      <form onSubmit={(event) => void save(event)}>
        <TextField label="Name" value={draft.name!} onInput={set('name')} readOnly={!writable} maxLength={200} error={fieldError('name')} />
        <SelectField label="Codec" value={draft.codec!} options={data.codecs} onChange={set('codec')} disabled={!writable} error={fieldError('codec')} />
        <div class="field-grid">
          {NUMBER_FIELDS.map(({ key, label, hint }) => (
            <TextField key={key} label={label} hint={hint} value={draft[key]!} onInput={set(key)} readOnly={!writable} error={fieldError(key)} inputMode="numeric" />
          ))}
        </div>
        <AreaField label="Launch arguments, one per line" hint="-Name or -Name=value; arguments the agent sets itself are refused." value={draft.launchArgs!} onInput={set('launchArgs')} readOnly={!writable} error={fieldError('launchArgs')} />
        <AreaField label="Sites that may embed the share page, one origin per line" hint="Such as https://shop.example.com. None: any site." value={draft.embedOrigins!} onInput={set('embedOrigins')} readOnly={!writable} error={fieldError('embedOrigins')} />
        {outcome !== undefined && outcome.field === undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
        {outcome?.kind === 'error' && outcome.field !== undefined && <Notice kind="error">The settings were not saved: see the field marked below its input.</Notice>}
        {writable && <button type="submit">Save settings</button>}
      </form>
    </section>
  );
}

function ProjectState({ projectId, data, onChanged }: { projectId: string; data: DashboardSettings; onChanged: () => void }) {
  const { api } = useDashboard();
  const [error, setError] = useState<string | undefined>(undefined);
  const enabled = data.project.enabled;
  return (
    <section class="card" aria-labelledby="state-heading">
      <h2 id="state-heading">Availability</h2>
      <p>{enabled ? 'The project is active: its share link starts sessions.' : 'The project is disabled: its share link starts no sessions.'}</p>
      {error !== undefined && <Notice kind="error">{error}</Notice>}
      {data.project.writable && (
        <button
          type="button"
          class={enabled ? 'button-danger' : undefined}
          onClick={() => {
            setError(undefined);
            api.post(`/projects/${projectId}/${enabled ? 'disable' : 'enable'}`).then(onChanged, (failure: unknown) => setError(describeFailure(failure)));
          }}
        >
          {enabled ? 'Disable the project (ends its sessions)' : 'Enable the project'}
        </button>
      )}
    </section>
  );
}

function WebhookSettings({ projectId, data, onSaved }: { projectId: string; data: DashboardSettings; onSaved: () => void }) {
  const { api } = useDashboard();
  const writable = data.project.writable;
  const [url, setUrl] = useState(data.settings.webhookUrl ?? '');
  const [events, setEvents] = useState<Set<string>>(new Set(data.settings.webhookEvents ?? data.webhookEventKinds));
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);
  const [test, setTest] = useState<{ kind: 'error' | 'success'; text: string } | undefined>(undefined);
  const [testing, setTesting] = useState(false);
  const deliveries = usePolled(() => api.get<{ deliveries: DashboardWebhookDelivery[] }>(`/projects/${projectId}/webhook-deliveries`), 10_000, [projectId]);
  // As above: only a change of the stored webhook resets the form, never a re-read of the page
  // (the stream settings saved above while a URL is being typed here).
  const storedUrl = data.settings.webhookUrl ?? '';
  const storedEvents = (data.settings.webhookEvents ?? data.webhookEventKinds).join('\n');
  useEffect(() => {
    setUrl(storedUrl);
    setEvents(new Set(storedEvents === '' ? [] : storedEvents.split('\n')));
  }, [storedUrl, storedEvents]);

  const save = async (event: Event) => {
    event.preventDefault();
    const all = data.webhookEventKinds.every((kind) => events.has(kind));
    try {
      await api.patch(`/projects/${projectId}/settings`, { webhookUrl: url.trim() === '' ? null : url.trim(), webhookEvents: all ? null : data.webhookEventKinds.filter((kind) => events.has(kind)) });
      setOutcome({ kind: 'success', text: url.trim() === '' ? 'Webhook removed.' : 'Webhook saved.' });
      onSaved();
    } catch (failure) {
      setOutcome({ kind: 'error', text: describeFailure(failure), field: fieldOfFailure(failure) });
    }
  };

  const runTest = async () => {
    setTesting(true);
    setTest(undefined);
    try {
      const result = await api.post<DashboardWebhookTest>(`/projects/${projectId}/webhook-test`);
      setTest(
        result.delivered
          ? { kind: 'success', text: `Delivered: the receiver answered ${result.statusCode} in ${result.durationMs} ms.` }
          : { kind: 'error', text: `Not delivered: ${result.error ?? 'unknown reason'} (after ${result.durationMs} ms).` },
      );
      deliveries.refresh();
    } catch (failure) {
      setTest({ kind: 'error', text: failure instanceof ApiFailure && failure.status === 404 ? `${failure.message}: save a webhook URL first.` : describeFailure(failure) });
    } finally {
      setTesting(false);
    }
  };

  const urlError = outcome?.kind === 'error' && outcome.field === 'webhookUrl' ? outcome.text : undefined;
  return (
    <section class="card" aria-labelledby="webhook-heading">
      <h2 id="webhook-heading">Webhook</h2>
      <p>Pixelfleet sends a JSON POST to this address as each build moves through its stages.</p>
      <form onSubmit={(event) => void save(event)}>
        <TextField label="Webhook URL" type={writable ? 'url' : 'text'} value={url} onInput={setUrl} readOnly={!writable} maxLength={2048} hint={writable ? 'An HTTPS address on the public internet. Empty: no webhook.' : undefined} error={urlError} />
        <fieldset class="events" disabled={!writable}>
          <legend>Events to send</legend>
          {data.webhookEventKinds.map((kind) => (
            <label key={kind} class="event">
              <input
                type="checkbox"
                checked={events.has(kind)}
                onChange={(event) => {
                  const checked = event.currentTarget.checked;
                  setEvents((current) => {
                    const next = new Set(current);
                    if (checked) next.add(kind);
                    else next.delete(kind);
                    return next;
                  });
                }}
              />{' '}
              <code>{kind}</code>
            </label>
          ))}
        </fieldset>
        {outcome !== undefined && urlError === undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
        {writable && (
          <p class="actions">
            <button type="submit">Save webhook</button>{' '}
            <button type="button" class="button-quiet" disabled={testing} onClick={() => void runTest()}>
              {testing ? 'Testing…' : 'Test'}
            </button>
          </p>
        )}
      </form>
      {test !== undefined && <Notice kind={test.kind}>{test.text}</Notice>}
      <h3>Recent deliveries</h3>
      {deliveries.error !== undefined && <Notice kind="error">{deliveries.error}</Notice>}
      {deliveries.data !== undefined && deliveries.data.deliveries.length === 0 && <p>None yet.</p>}
      {deliveries.data !== undefined && deliveries.data.deliveries.length > 0 && (
        <div class="table-scroll">
          <table class="deliveries">
            <caption class="visually-hidden">Webhook deliveries, newest first</caption>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Event</th>
                <th scope="col">Build</th>
                <th scope="col">Result</th>
                <th scope="col">Time</th>
              </tr>
            </thead>
            <tbody>
              {deliveries.data.deliveries.map((d, index) => (
                <tr key={`${d.attemptedAt}-${index}`}>
                  <td>
                    <time dateTime={isoTime(d.attemptedAt)}>{formatTime(d.attemptedAt)}</time>
                  </td>
                  <td>
                    <code>{d.event}</code>
                  </td>
                  <td>{d.uploadId === null ? '' : <code>{d.uploadId}</code>}</td>
                  <td class={d.error === null ? 'result-good' : 'result-bad'}>{d.error ?? `answered ${d.statusCode}`}</td>
                  <td>{d.durationMs} ms</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

function SelectField({ label, value, options, onChange, disabled, error }: { label: string; value: string; options: string[]; onChange: (value: string) => void; disabled: boolean; error: string | undefined }) {
  const id = `select-${label.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <select id={id} value={value} disabled={disabled} onChange={(event) => onChange(event.currentTarget.value)} aria-invalid={error === undefined ? undefined : 'true'} aria-describedby={error === undefined ? undefined : `${id}-error`}>
        {options.map((option) => (
          <option key={option} value={option}>
            {option}
          </option>
        ))}
      </select>
      {error !== undefined && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}

function AreaField({ label, hint, value, onInput, readOnly, error }: { label: string; hint: string; value: string; onInput: (value: string) => void; readOnly: boolean; error: string | undefined }) {
  const id = `area-${label.replace(/\W+/g, '-').toLowerCase().slice(0, 40)}`;
  const described = [`${id}-hint`, error === undefined ? '' : `${id}-error`].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <textarea id={id} rows={3} value={value} readOnly={readOnly} onInput={(event) => onInput(event.currentTarget.value)} aria-invalid={error === undefined ? undefined : 'true'} aria-describedby={described} />
      <p class="field-hint" id={`${id}-hint`}>
        {hint}
      </p>
      {error !== undefined && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  );
}
