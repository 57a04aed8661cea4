// A labelled input with its error beside it: the error is tied to the input (aria-describedby,
// aria-invalid) so that a screen reader says it when the input has focus.
import type { InputHTMLAttributes, TargetedEvent } from 'preact';
import { useId } from 'preact/hooks';

interface TextFieldProps {
  label: string;
  value: string;
  onInput: (value: string) => void;
  type?: 'text' | 'email' | 'password' | 'url';
  autocomplete?: string;
  required?: boolean;
  minLength?: number;
  maxLength?: number;
  hint?: string;
  error?: string;
  readOnly?: boolean;
  inputMode?: 'numeric' | 'text';
}

export function TextField(props: TextFieldProps) {
  const id = useId();
  const described = [props.hint === undefined ? '' : `${id}-hint`, props.error === undefined ? '' : `${id}-error`].filter(Boolean).join(' ');
  // One object typed as a whole: preact types each input `type` separately, and this one is chosen at run time.
  const inputAttributes = {
    id,
    type: props.type ?? 'text',
    value: props.value,
    onInput: (event: TargetedEvent<HTMLInputElement>) => props.onInput(event.currentTarget.value),
    autocomplete: props.autocomplete,
    required: props.required,
    minLength: props.minLength,
    maxLength: props.maxLength,
    readOnly: props.readOnly,
    inputMode: props.inputMode,
    'aria-invalid': props.error === undefined ? undefined : 'true',
    'aria-describedby': described === '' ? undefined : described,
  } as InputHTMLAttributes<HTMLInputElement>;
  return (
    <div class="field">
      <label for={id}>{props.label}</label>
      <input {...inputAttributes} />
      {props.hint !== undefined && (
        <p class="field-hint" id={`${id}-hint`}>
          {props.hint}
        </p>
      )}
      {props.error !== undefined && (
        <p class="field-error" id={`${id}-error`}>
          {props.error}
        </p>
      )}
    </div>
  );
}
