// What the viewer is looking at, as one state machine: the table below says which state may follow
// which, and the page asks it before changing the screen.

import type { CloseDescription } from '../close-codes';

export type ViewState =
  /** Socket opening, nothing heard yet. */
  | { readonly kind: 'opening' }
  /** Waiting in the project's queue (position 1 = next). */
  | { readonly kind: 'queued'; readonly position: number; readonly queueLength: number; readonly waitingForServer: boolean; readonly estimatedWaitSeconds?: number }
  /** A streaming server is assigned and the app is starting. */
  | { readonly kind: 'starting' }
  /** The app is ready; WebRTC is being negotiated. */
  | { readonly kind: 'connecting' }
  /** The video has a stream (it may still wait for a click to play). */
  | { readonly kind: 'streaming' }
  /** The session is over; terminal. */
  | { readonly kind: 'ended'; readonly close: CloseDescription };

export type ViewStateKind = ViewState['kind'];

/** State → states that may follow it. Staying in `queued` is allowed (the position moves). */
export const VIEW_TRANSITIONS: Readonly<Record<ViewStateKind, readonly ViewStateKind[]>> = Object.freeze({
  opening: ['queued', 'starting', 'connecting', 'streaming', 'ended'],
  queued: ['queued', 'starting', 'connecting', 'streaming', 'ended'],
  // A server that fails to start the app may put the session back in the queue.
  starting: ['queued', 'connecting', 'streaming', 'ended'],
  connecting: ['streaming', 'ended'],
  streaming: ['ended'],
  ended: [],
});

export function canTransition(from: ViewStateKind, to: ViewStateKind): boolean {
  return VIEW_TRANSITIONS[from].includes(to);
}
