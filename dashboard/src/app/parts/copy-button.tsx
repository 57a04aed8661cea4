// Copies a text to the clipboard and says so in a live region; where the clipboard is refused
// (an insecure origin, a denied permission) it says to copy by hand instead.
import { useEffect, useState } from 'preact/hooks';

export function CopyButton({ text, label }: { text: string; label: string }) {
  const [outcome, setOutcome] = useState<'' | 'copied' | 'refused'>('');
  useEffect(() => {
    if (outcome === '') return;
    const timer = setTimeout(() => setOutcome(''), 4000);
    return () => clearTimeout(timer);
  }, [outcome]);
  return (
    <span class="copy">
      <button
        type="button"
        class="button-small"
        aria-label={label}
        onClick={() => {
          navigator.clipboard.writeText(text).then(
            () => setOutcome('copied'),
            () => setOutcome('refused'),
          );
        }}
      >
        Copy
      </button>
      <span class="copy-outcome" role="status">
        {outcome === 'copied' ? 'Copied' : outcome === 'refused' ? 'The browser refused the clipboard: select the text and copy it.' : ''}
      </span>
    </span>
  );
}
