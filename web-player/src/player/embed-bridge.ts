// The page's side of the iframe embedding API: posts state and app responses to window.parent and
// takes validated UIInteraction messages from it (messages from any other window are ignored).

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
    const message = parseHostMessage(event.data);
    if (message !== undefined) this.onUiInteraction(message.data);
  };

  /**
   * @param self the page's window; @param host its parent (the embedding page).
   * The target origin is `*`: the embedding page's origin is not known to the player.
   */
  constructor(
    private readonly self: Window,
    private readonly host: Window,
    private readonly onUiInteraction: (data: UiInteractionData) => void,
  ) {
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
    this.host.postMessage(message, '*');
  }
}
