// The person's own account: a new API key (after saying the current one stops working; shown once
// and mailed), a new password, and signing out everywhere.
import { useState } from 'preact/hooks';
import { describeFailure } from '../api';
import { useDashboard } from '../context';
import { CopyButton } from '../parts/copy-button';
import { Notice } from '../parts/notice';
import { TextField } from '../parts/text-field';

export function AccountPage() {
  const { me } = useDashboard();
  return (
    <>
      <h1>Account</h1>
      <p>
        Signed in as <strong>{me?.email}</strong> (user <code>{me?.userId}</code>).
      </p>
      <ApiKeySection />
      <PasswordSection />
      <OperatorSection />
      <SignOutEverywhereSection />
    </>
  );
}

function ApiKeySection() {
  const { api, me } = useDashboard();
  const [stage, setStage] = useState<'idle' | 'confirming' | 'busy'>('idle');
  const [issued, setIssued] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  const issue = async () => {
    setStage('busy');
    setError(undefined);
    try {
      setIssued((await api.post<{ apiKey: string }>('/api-key')).apiKey);
    } catch (failure) {
      setError(describeFailure(failure));
    } finally {
      setStage('idle');
    }
  };

  return (
    <section class="card" aria-labelledby="api-key-heading">
      <h2 id="api-key-heading">API key</h2>
      <p>
        Your key signs your calls to the build and analytics APIs. Only one key works at a time; Pixelfleet keeps only a digest of it, so a lost key cannot be shown again: request
        a new one.
      </p>
      {issued !== undefined && (
        <div class="secret" aria-live="polite">
          <p>
            Your new API key (also sent to {me?.email}). It is shown only now: keep it somewhere safe.
          </p>
          <p>
            <code data-testid="new-api-key">{issued}</code> <CopyButton text={issued} label="Copy the new API key" />
          </p>
        </div>
      )}
      {error !== undefined && <Notice kind="error">{error}</Notice>}
      {stage === 'confirming' ? (
        <div class="confirm" role="group" aria-labelledby="api-key-confirm">
          <p id="api-key-confirm">
            <strong>Your current key stops working now.</strong> Every program that uses it must be given the new one.
          </p>
          <button type="button" class="button-danger" onClick={() => void issue()}>
            Replace my key
          </button>{' '}
          <button type="button" class="button-quiet" onClick={() => setStage('idle')}>
            Cancel
          </button>
        </div>
      ) : (
        <button type="button" disabled={stage === 'busy'} onClick={() => setStage('confirming')}>
          Request API Key
        </button>
      )}
    </section>
  );
}

function PasswordSection() {
  const { api } = useDashboard();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [outcome, setOutcome] = useState<{ kind: 'error' | 'success'; text: string } | undefined>(undefined);

  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      await api.post('/password', { currentPassword: current, newPassword: next });
      setOutcome({ kind: 'success', text: 'Your password is changed. Your other sign-ins have ended.' });
      setCurrent('');
      setNext('');
    } catch (failure) {
      setOutcome({ kind: 'error', text: describeFailure(failure) });
    }
  };

  return (
    <section class="card" aria-labelledby="password-heading">
      <h2 id="password-heading">Password</h2>
      <form onSubmit={(event) => void submit(event)}>
        <TextField label="Current password" type="password" autocomplete="current-password" required maxLength={256} value={current} onInput={setCurrent} />
        <TextField label="New password" type="password" autocomplete="new-password" required minLength={12} maxLength={256} hint="At least 12 characters." value={next} onInput={setNext} />
        {outcome !== undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
        <button type="submit">Change password</button>
      </form>
    </section>
  );
}

function SignOutEverywhereSection() {
  const { api, setMe } = useDashboard();
  const [error, setError] = useState<string | undefined>(undefined);
  return (
    <section class="card" aria-labelledby="sign-out-heading">
      <h2 id="sign-out-heading">Sign out everywhere</h2>
      <p>Ends every sign-in of your account, on every browser, this one included.</p>
      {error !== undefined && <Notice kind="error">{error}</Notice>}
      <button
        type="button"
        class="button-quiet"
        onClick={() => {
          api.post('/sign-out-everywhere').then(
            () => setMe(undefined),
            (failure: unknown) => setError(describeFailure(failure)),
          );
        }}
      >
        Sign out everywhere
      </button>
    </section>
  );
}

/** An operator shows the admin token once to see the fleet from this sign-in, for an hour. */
function OperatorSection() {
  const { api, me, setMe } = useDashboard();
  const [adminToken, setAdminToken] = useState('');
  const [outcome, setOutcome] = useState<{ kind: 'error' | 'success'; text: string } | undefined>(undefined);
  const submit = async (event: Event) => {
    event.preventDefault();
    try {
      const { operatorUntil } = await api.post<{ operatorUntil: number }>('/operator', { adminToken });
      setAdminToken('');
      setOutcome({ kind: 'success', text: `This sign-in sees the fleet until ${new Date(operatorUntil).toLocaleTimeString()}.` });
      if (me !== undefined) setMe({ ...me, operator: true });
    } catch (failure) {
      setOutcome({ kind: 'error', text: describeFailure(failure) });
    }
  };
  return (
    <section class="card" aria-labelledby="operator-heading">
      <h2 id="operator-heading">Operator</h2>
      <p>Operators of this Pixelfleet: the admin token lets this sign-in see the fleet of streaming servers, for an hour. Pixelfleet does not keep it.</p>
      <form onSubmit={(event) => void submit(event)}>
        <TextField label="Admin token" type="password" autocomplete="off" required maxLength={1024} value={adminToken} onInput={setAdminToken} />
        {outcome !== undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
        <button type="submit">Confirm the admin token</button>
      </form>
    </section>
  );
}
