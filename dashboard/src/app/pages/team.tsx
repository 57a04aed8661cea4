// A project's team, for its owner: each member's access (changed in place), whether they have
// joined or their invitation is still open, removal (their key and sign-in lose the project at
// once), and a new member by e-mail address (a new address is invited to set a password).
import { useState } from 'preact/hooks';
import { describeFailure } from '../api';
import { useDashboard } from '../context';
import { formatTime, isoTime } from '../format';
import { Notice } from '../parts/notice';
import { ProjectNav } from '../parts/project-nav';
import { TextField } from '../parts/text-field';
import { usePolled } from '../polling';
import type { DashboardTeam } from '../../wire';

type Access = 'FULL' | 'READONLY';
const ACCESS_WORDS: Record<Access, string> = { FULL: 'Full access', READONLY: 'Read only' };

export function TeamPage({ projectId }: { projectId: string }) {
  const { api } = useDashboard();
  const polled = usePolled(() => api.get<DashboardTeam>(`/projects/${projectId}/members`), undefined, [projectId]);
  const [outcome, setOutcome] = useState<{ kind: 'error' | 'success'; text: string } | undefined>(undefined);
  const data = polled.data;
  const change = (promise: Promise<unknown>, success: string) => {
    setOutcome(undefined);
    promise.then(
      () => {
        setOutcome({ kind: 'success', text: success });
        polled.refresh();
      },
      (failure: unknown) => setOutcome({ kind: 'error', text: describeFailure(failure) }),
    );
  };
  return (
    <>
      <ProjectNav projectId={projectId} project={data?.project} tab="team" />
      {polled.error !== undefined && <Notice kind="error">{polled.error}</Notice>}
      {outcome !== undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
      {data !== undefined && (
        <>
          <InviteForm
            writable={data.project.writable}
            onInvite={(email, access) => change(api.post(`/projects/${projectId}/members`, { email, access }), `${email} is a member now (${ACCESS_WORDS[access].toLowerCase()}).`)}
          />
          <section class="card" aria-labelledby="members-heading">
            <h2 id="members-heading">Members</h2>
            {data.members.length === 0 ? (
              <p>Only you, the owner, work on this project.</p>
            ) : (
              <div class="table-scroll">
                <table class="members">
                  <thead>
                    <tr>
                      <th scope="col">E-mail address</th>
                      <th scope="col">Access</th>
                      <th scope="col">Since</th>
                      <th scope="col">
                        <span class="visually-hidden">Remove</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.members.map((m) => (
                      <tr key={m.userId}>
                        <td>
                          {m.email}
                          {!m.joined && <span class="badge">invited</span>}
                        </td>
                        <td>
                          <select
                            aria-label={`Access of ${m.email}`}
                            value={m.access}
                            disabled={!data.project.writable}
                            onChange={(event) => {
                              const access = event.currentTarget.value as Access;
                              change(api.patch(`/projects/${projectId}/members/${m.userId}`, { access }), `${m.email} has ${ACCESS_WORDS[access].toLowerCase()} now.`);
                            }}
                          >
                            <option value="FULL">{ACCESS_WORDS.FULL}</option>
                            <option value="READONLY">{ACCESS_WORDS.READONLY}</option>
                          </select>
                        </td>
                        <td>
                          <time dateTime={isoTime(m.addedAt)}>{formatTime(m.addedAt)}</time>
                        </td>
                        <td>
                          {data.project.writable && (
                            <button type="button" class="button-small button-danger" onClick={() => change(api.post(`/projects/${projectId}/members/${m.userId}/remove`), `${m.email} is no longer a member.`)}>
                              Remove {m.email}
                            </button>
                          )}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
          </section>
        </>
      )}
    </>
  );
}

function InviteForm({ writable, onInvite }: { writable: boolean; onInvite: (email: string, access: Access) => void }) {
  const [email, setEmail] = useState('');
  const [access, setAccess] = useState<Access>('READONLY');
  if (!writable) return null;
  return (
    <section class="card" aria-labelledby="invite-heading">
      <h2 id="invite-heading">Add a member</h2>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          onInvite(email.trim(), access);
          setEmail('');
        }}
      >
        <TextField label="Their e-mail address" type="email" required maxLength={254} value={email} onInput={setEmail} hint="Someone new gets an e-mail to choose a password." />
        <div class="field">
          <label for="invite-access">Access</label>
          <select id="invite-access" value={access} onChange={(event) => setAccess(event.currentTarget.value as Access)}>
            <option value="READONLY">{ACCESS_WORDS.READONLY}: sees builds, sessions and settings</option>
            <option value="FULL">{ACCESS_WORDS.FULL}: also submits builds and changes settings</option>
          </select>
        </div>
        <button type="submit">Add member</button>
      </form>
    </section>
  );
}
