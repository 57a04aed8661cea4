// Where a mailed link lands: `<base>/set-password#token=…` (an invitation) or
// `<base>/reset-password#token=…` (a reset). The token is in the fragment, which the browser never
// sends to a server or in a Referer; the page takes it and wipes it from the address bar at once.
import { useEffect, useState } from 'preact/hooks';
import { describeFailure } from '../api';
import { useDashboard, type Me } from '../context';
import { Link } from '../parts/link';
import { Notice } from '../parts/notice';
import { TextField } from '../parts/text-field';

/** The server's shortest password (control-plane people/passwords.ts MIN_PASSWORD_CHARS); the server decides. */
const MIN_PASSWORD_CHARS = 12;

export function SetPasswordPage({ purpose, onDone }: { purpose: 'invitation' | 'passwordReset'; onDone: (me: Me) => void }) {
  const { api } = useDashboard();
  const [token] = useState(() => new URLSearchParams(location.hash.slice(1)).get('token') ?? '');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (location.hash !== '') history.replaceState(history.state, '', location.pathname);
  }, []);

  const submit = async (event: Event) => {
    event.preventDefault();
    if (password !== again) {
      setError('The two passwords are not the same.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      onDone(await api.post<Me>('/set-password', { token, purpose, password }));
    } catch (failure) {
      setError(describeFailure(failure));
    } finally {
      setBusy(false);
    }
  };

  const title = purpose === 'invitation' ? 'Choose your password' : 'Choose a new password';
  if (token === '') {
    return (
      <section class="card narrow">
        <h1>{title}</h1>
        <Notice kind="error">This address has no link token. Open the link from your e-mail again, or ask for a new one.</Notice>
        <p>
          <Link to="/forgot-password">Send me a new link</Link>
        </p>
      </section>
    );
  }
  return (
    <section class="card narrow">
      <h1>{title}</h1>
      <form onSubmit={(event) => void submit(event)}>
        <TextField
          label="New password"
          type="password"
          autocomplete="new-password"
          required
          minLength={MIN_PASSWORD_CHARS}
          maxLength={256}
          hint={`At least ${MIN_PASSWORD_CHARS} characters. A few unrelated words make a good one.`}
          value={password}
          onInput={setPassword}
        />
        <TextField label="The same password again" type="password" autocomplete="new-password" required maxLength={256} value={again} onInput={setAgain} />
        {error !== undefined && <Notice kind="error">{error}</Notice>}
        <button type="submit" disabled={busy}>
          Set the password
        </button>
      </form>
    </section>
  );
}
