// The operators' fleet: every streaming server with its link, slots in use, draining and agent
// version, read again every few seconds; drain (no new sessions, the running ones go on) and undrain.
import { useState } from 'preact/hooks';
import { describeFailure } from '../api';
import { useDashboard } from '../context';
import { formatTime, isoTime } from '../format';
import { Notice } from '../parts/notice';
import { usePolled } from '../polling';
import type { DashboardFleet } from '../../wire';

export const FLEET_REFRESH_MS = 5000;

export function FleetPage() {
  const { api } = useDashboard();
  const polled = usePolled(() => api.get<DashboardFleet>('/fleet'), FLEET_REFRESH_MS);
  const [outcome, setOutcome] = useState<{ kind: 'error' | 'success'; text: string } | undefined>(undefined);
  const data = polled.data;
  const act = (workerId: string, action: 'drain' | 'undrain') => {
    setOutcome(undefined);
    api.post(`/fleet/workers/${workerId}/${action}`).then(
      () => {
        setOutcome({ kind: 'success', text: action === 'drain' ? `${workerId} takes no new sessions; its running ones go on.` : `${workerId} takes sessions again.` });
        polled.refresh();
      },
      (failure: unknown) => setOutcome({ kind: 'error', text: describeFailure(failure) }),
    );
  };
  const slots = data?.workers.reduce((sum, w) => sum + w.slots, 0) ?? 0;
  const used = data?.workers.reduce((sum, w) => sum + w.usedSlots, 0) ?? 0;
  return (
    <>
      <h1>Fleet</h1>
      {polled.error !== undefined && <Notice kind="error">{polled.error}</Notice>}
      {outcome !== undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
      {data === undefined && polled.error === undefined && <p aria-busy="true">Loading the fleet…</p>}
      {data !== undefined && (
        <>
          <p>
            {data.workers.length} streaming {data.workers.length === 1 ? 'server' : 'servers'}, {used} of {slots} slots in use.
          </p>
          {data.workers.length > 0 && (
            <div class="table-scroll">
              <table class="fleet">
                <caption class="visually-hidden">Streaming servers</caption>
                <thead>
                  <tr>
                    <th scope="col">Server</th>
                    <th scope="col">Region</th>
                    <th scope="col">Link</th>
                    <th scope="col">Slots in use</th>
                    <th scope="col">Agent</th>
                    <th scope="col">Last seen</th>
                    <th scope="col">
                      <span class="visually-hidden">Drain</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.workers.map((w) => (
                    <tr key={w.workerId}>
                      <td>
                        {w.hostname}
                        <br />
                        <code class="muted">{w.workerId}</code>
                      </td>
                      <td>{w.region}</td>
                      <td class={w.status === 'connected' ? 'result-good' : w.status === 'draining' ? 'result-neutral' : 'result-bad'}>{w.status}</td>
                      <td>
                        {w.usedSlots} of {w.slots}
                      </td>
                      <td>{w.agentVersion}</td>
                      <td>{w.lastSeenAt === null ? '—' : <time dateTime={isoTime(w.lastSeenAt)}>{formatTime(w.lastSeenAt)}</time>}</td>
                      <td>
                        {w.draining ? (
                          <button type="button" class="button-small" onClick={() => act(w.workerId, 'undrain')}>
                            Undrain {w.hostname}
                          </button>
                        ) : (
                          <button type="button" class="button-small button-danger" onClick={() => act(w.workerId, 'drain')}>
                            Drain {w.hostname}
                          </button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </>
  );
}
