// Ask for a password reset link by e-mail. The answer is the same whether or not the address has
// an account (the server's sentence), so this page cannot tell anyone who is a customer.
import { useState } from 'preact/hooks';
import { describeFailure } from '../api';
import { useDashboard } from '../context';
import { Link } from '../parts/link';
import { Notice } from '../parts/notice';
import { TextField } from '../parts/text-field';

export function ForgotPasswordPage() {
  const { api } = useDashboard();
  const [email, setEmail] = useState('');
  const [outcome, setOutcome] = useState<{ kind: 'error' | 'success'; text: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const answer = await api.post<{ message: string }>('/password-reset', { email });
      setOutcome({ kind: 'success', text: answer.message });
    } catch (failure) {
      setOutcome({ kind: 'error', text: describeFailure(failure) });
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="card narrow">
      <h1>Reset your password</h1>
      <p>We will e-mail you a link to choose a new password. It works once, for a limited time.</p>
      <form onSubmit={(event) => void submit(event)}>
        <TextField label="E-mail address" type="email" autocomplete="username" required maxLength={254} value={email} onInput={setEmail} />
        {outcome !== undefined && <Notice kind={outcome.kind}>{outcome.text}</Notice>}
        <button type="submit" disabled={busy}>
          Send the link
        </button>
      </form>
      <p>
        <Link to="/sign-in">Back to sign-in</Link>
      </p>
    </section>
  );
}
