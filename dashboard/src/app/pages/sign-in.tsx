// Sign in with e-mail address and password. A refusal is the same for a wrong password and an
// unknown address (the server's sentence); a throttled account or address says how long to wait.
import { useState } from 'preact/hooks';
import { describeFailure } from '../api';
import { useDashboard, type Me } from '../context';
import { Link } from '../parts/link';
import { Notice } from '../parts/notice';
import { TextField } from '../parts/text-field';

export function SignInPage({ email: initialEmail = '', note }: { email?: string; note?: string }) {
  const { api, setMe } = useDashboard();
  const [email, setEmail] = useState(initialEmail);
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      setMe(await api.post<Me>('/sign-in', { email, password }));
    } catch (failure) {
      setError(describeFailure(failure));
      setPassword('');
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="card narrow">
      <h1>Sign in</h1>
      {note !== undefined && <Notice kind="success">{note}</Notice>}
      <form onSubmit={(event) => void submit(event)}>
        <TextField label="E-mail address" type="email" autocomplete="username" required maxLength={254} value={email} onInput={setEmail} />
        <TextField label="Password" type="password" autocomplete="current-password" required maxLength={256} value={password} onInput={setPassword} />
        {error !== undefined && <Notice kind="error">{error}</Notice>}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p>
        <Link to="/forgot-password">Forgot your password?</Link>
      </p>
    </section>
  );
}
