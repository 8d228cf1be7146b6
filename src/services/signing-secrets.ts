import type { Clock } from '../clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { Store } from '../store/store.js';

/** Decrypted secrets kept at most this many; a rotation adds one entry per project. */
const OPENED_MAX = 10_000;

/**
 * The webhook secrets that sign a project's deliveries now, in clear: what the delivery engine
 * (attempts and events) and test deliveries are given. Management's listing of the same secrets
 * stays with ManageService.
 */
export class SigningSecrets {
  /** Decrypted secrets by ciphertext: a ciphertext never changes meaning, so this never goes stale. */
  private readonly opened = new Map<string, string>();

  constructor(private readonly deps: { store: Store; clock: Clock; secretBox: SecretBox }) {}

  /** The secrets that sign a delivery now, in clear, newest first (the newest goes in Authorization). */
  async forProject(projectId: string): Promise<string[]> {
    const rows = await this.deps.store.webhookSecretListActive({ projectId, now: this.deps.clock.now() });
    return rows.map((row) => {
      let secret = this.opened.get(row.ciphertext);
      if (secret === undefined) {
        secret = this.deps.secretBox.open(row.ciphertext);
        // Bounded: start over rather than grow without end.
        if (this.opened.size >= OPENED_MAX) this.opened.clear();
        this.opened.set(row.ciphertext, secret);
      }
      return secret;
    });
  }
}
