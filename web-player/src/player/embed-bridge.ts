// The page's side of the iframe embedding API: posts state and app responses to window.parent and
// takes validated UIInteraction messages from it (messages from any other window are ignored).
// A project with an embed allow-list (embedOrigins) is framed only by those sites (the server's CSP
// frame-ancestors); the bridge then posts to those origins by name and hears only them, so that a
// page that navigated the parent elsewhere learns nothing and commands nothing.

import {
  EMBED_SOURCE,
  parseHostMessage,
  type EmbedStateMessage,
  type PlayerToHostMessage,
  type UiInteractionData,
} from '../embed-messages';

export class EmbedBridge {
  private lastState: string | undefined;
  private readonly onMessage = (event: MessageEvent<unknown>): void => {
    if (event.source !== this.host) return;
    if (this.allowedOrigins.length > 0 && !this.allowedOrigins.includes(event.origin)) return;
    const message = parseHostMessage(event.data);
    if (message !== undefined) this.onUiInteraction(message.data);
  };

  /** Where each message is posted: `*` with no allow-list; else the parent's origin when it is listed and the browser tells it, or each listed origin (only the parent's receives). */
  private readonly targets: readonly string[];

  /**
   * @param self the page's window; @param host its parent (the embedding page);
   * @param allowedOrigins the project's embedOrigins (empty: any site, target origin `*`).
   */
  constructor(
    private readonly self: Window,
    private readonly host: Window,
    private readonly onUiInteraction: (data: UiInteractionData) => void,
    private readonly allowedOrigins: readonly string[] = [],
  ) {
    // Chromium and Safari name the parent's origin; Firefox has no ancestorOrigins.
    const parentOrigin = (self.location as Partial<Location>).ancestorOrigins?.item(0) ?? undefined;
    if (allowedOrigins.length === 0) this.targets = ['*'];
    else this.targets = parentOrigin !== undefined && allowedOrigins.includes(parentOrigin) ? [parentOrigin] : allowedOrigins;
    self.addEventListener('message', this.onMessage);
  }

  /** Post a state; repeats of the same state are not posted again. */
  postState(message: EmbedStateMessage): void {
    if (message.state === this.lastState) return;
    this.lastState = message.state;
    this.post(message);
  }

  postResponse(data: string): void {
    this.post({ source: EMBED_SOURCE, type: 'response', data });
  }

  close(): void {
    this.self.removeEventListener('message', this.onMessage);
  }

  private post(message: PlayerToHostMessage): void {
    for (const target of this.targets) this.host.postMessage(message, target);
  }
}
