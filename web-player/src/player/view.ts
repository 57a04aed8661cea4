// The page's DOM: the video area, one status card (queue, starting, connecting, ended), the
// click-to-play overlay and the mute and fullscreen buttons. Plain DOM, no inline styles or scripts.

import type { ViewState } from './view-state';

export interface ViewActions {
  /** The viewer clicked "Click to play" (autoplay was blocked). */
  readonly onPlay: () => void;
  /** The viewer asked to mute/unmute; returns the new muted state. */
  readonly onToggleMute: () => boolean;
  /** The viewer clicked "Try again" after the session ended. */
  readonly onRetry: () => void;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, parent?: HTMLElement): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  parent?.appendChild(node);
  return node;
}

function icon(paths: readonly string[]): SVGSVGElement {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('aria-hidden', 'true');
  for (const d of paths) {
    const path = document.createElementNS(SVG_NS, 'path');
    path.setAttribute('d', d);
    svg.appendChild(path);
  }
  return svg;
}

const ICONS = {
  enterFullscreen: ['M4 9V4h5', 'M20 9V4h-5', 'M4 15v5h5', 'M20 15v5h-5'],
  exitFullscreen: ['M9 4v5H4', 'M15 4v5h5', 'M9 20v-5H4', 'M15 20v-5h5'],
  muted: ['M4 9h4l5-4v14l-5-4H4z', 'M17 9l4 6', 'M21 9l-4 6'],
  unmuted: ['M4 9h4l5-4v14l-5-4H4z', 'M17 8.5a5 5 0 0 1 0 7', 'M19.5 6a8.5 8.5 0 0 1 0 12'],
  play: ['M8 5.5v13l11-6.5z'],
} as const;

function setIcon(button: HTMLButtonElement, paths: readonly string[], label: string): void {
  button.replaceChildren(icon(paths));
  button.setAttribute('aria-label', label);
  button.title = label;
}

/** The estimated wait in words: "about N minutes", rounded up; under a minute says so. */
export function waitInWords(seconds: number): string {
  if (seconds < 60) return 'less than a minute';
  const minutes = Math.ceil(seconds / 60);
  return `about ${minutes} minute${minutes === 1 ? '' : 's'}`;
}

function queueDetail(position: number, estimatedWaitSeconds: number | undefined): string {
  const wait = estimatedWaitSeconds === undefined ? '' : ` Estimated wait: ${waitInWords(estimatedWaitSeconds)}.`;
  if (position <= 1) return `You are next. The stream starts as soon as a server is free.${wait}`;
  const ahead = position - 1;
  return `${ahead} ${ahead === 1 ? 'person is' : 'people are'} ahead of you.${wait}`;
}

export class PlayerView {
  /** Where the frontend library puts its video element and attaches input handlers. */
  readonly videoParent: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly spinner: HTMLDivElement;
  private readonly badge: HTMLDivElement;
  private readonly title: HTMLHeadingElement;
  private readonly detail: HTMLParagraphElement;
  private readonly retry: HTMLButtonElement;
  private readonly playOverlay: HTMLButtonElement;
  private readonly controls: HTMLDivElement;
  private readonly muteButton: HTMLButtonElement;
  private readonly fullscreenButton: HTMLButtonElement;
  private readonly notice: HTMLDivElement;

  constructor(
    private readonly root: HTMLElement,
    actions: ViewActions,
  ) {
    root.classList.add('pf-player');
    this.videoParent = element('div', 'pf-video', root);

    this.status = element('div', 'pf-status', root);
    this.status.setAttribute('role', 'status');
    this.status.setAttribute('aria-live', 'polite');
    const card = element('div', 'pf-card', this.status);
    this.spinner = element('div', 'pf-spinner', card);
    this.spinner.setAttribute('aria-hidden', 'true');
    this.badge = element('div', 'pf-badge', card);
    this.badge.setAttribute('aria-hidden', 'true');
    this.title = element('h1', 'pf-title', card);
    this.detail = element('p', 'pf-detail', card);
    this.retry = element('button', 'pf-button', card);
    this.retry.type = 'button';
    this.retry.textContent = 'Try again';
    this.retry.addEventListener('click', () => actions.onRetry());

    this.playOverlay = element('button', 'pf-play', root);
    this.playOverlay.type = 'button';
    this.playOverlay.append(icon(ICONS.play), document.createTextNode('Click to play'));
    this.playOverlay.hidden = true;
    this.playOverlay.addEventListener('click', () => actions.onPlay());

    this.notice = element('div', 'pf-notice', root);
    this.notice.setAttribute('role', 'status');
    this.notice.textContent = 'Reconnecting…';
    this.notice.hidden = true;

    this.controls = element('div', 'pf-controls', root);
    this.controls.hidden = true;
    this.muteButton = element('button', 'pf-icon-button', this.controls);
    this.muteButton.type = 'button';
    this.setMuted(true);
    this.muteButton.addEventListener('click', () => this.setMuted(actions.onToggleMute()));
    this.fullscreenButton = element('button', 'pf-icon-button', this.controls);
    this.fullscreenButton.type = 'button';
    this.fullscreenButton.hidden = !document.fullscreenEnabled;
    this.fullscreenButton.addEventListener('click', () => this.toggleFullscreen());
    document.addEventListener('fullscreenchange', () => this.renderFullscreen());
    this.renderFullscreen();

    this.render({ kind: 'opening' });
  }

  render(state: ViewState): void {
    this.root.dataset['state'] = state.kind;
    const streaming = state.kind === 'streaming';
    this.status.hidden = streaming;
    this.controls.hidden = !streaming;
    if (state.kind === 'ended') this.setReconnecting(false);
    if (!streaming) this.playOverlay.hidden = true;
    this.spinner.hidden = state.kind === 'queued' || state.kind === 'ended';
    this.badge.hidden = state.kind !== 'queued';
    this.retry.hidden = state.kind !== 'ended';
    switch (state.kind) {
      case 'opening':
        this.setText('Connecting…', '');
        break;
      case 'queued':
        this.badge.textContent = String(state.position);
        this.setText(
          `You are number ${state.position} in line`,
          state.waitingForServer ? 'Waiting for a streaming server to come back. You keep your place in line.' : queueDetail(state.position, state.estimatedWaitSeconds),
        );
        break;
      case 'starting':
        this.setText('Starting…', 'Launching the application. This can take a minute.');
        break;
      case 'connecting':
        this.setText('Connecting…', 'Setting up the stream.');
        break;
      case 'streaming':
        break;
      case 'ended':
        this.setText(state.close.sentence, '');
        break;
      default: {
        const unreachable: never = state;
        throw new Error(`unknown view state ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /** Show or hide "Click to play" (only while streaming). */
  showPlayOverlay(show: boolean): void {
    this.playOverlay.hidden = !show || this.root.dataset['state'] !== 'streaming';
  }

  /** A quiet notice over a stream that keeps playing while its signalling socket is being resumed. */
  setReconnecting(reconnecting: boolean): void {
    this.notice.hidden = !reconnecting;
    if (reconnecting) this.root.dataset['reconnecting'] = 'true';
    else delete this.root.dataset['reconnecting'];
  }

  setMuted(muted: boolean): void {
    setIcon(this.muteButton, muted ? ICONS.muted : ICONS.unmuted, muted ? 'Unmute' : 'Mute');
  }

  private setText(title: string, detail: string): void {
    this.title.textContent = title;
    this.detail.textContent = detail;
    this.detail.hidden = detail === '';
  }

  private toggleFullscreen(): void {
    const request = document.fullscreenElement === null ? this.root.requestFullscreen() : document.exitFullscreen();
    request.catch(() => undefined); // refused (no user activation, iframe without allow="fullscreen")
  }

  private renderFullscreen(): void {
    const active = document.fullscreenElement !== null;
    setIcon(this.fullscreenButton, active ? ICONS.exitFullscreen : ICONS.enterFullscreen, active ? 'Exit full screen' : 'Full screen');
  }
}
