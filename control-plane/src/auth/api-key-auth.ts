// API key authentication for the build & project API (key in query or body) and the analytics
// API (x-api-key): SHA-256 digests compared in constant time against the user's one live key.
import { secretMatchesDigest, sha256Hex } from '../lib/secrets';
import { ApiError } from '../errors';
import type { KeyFacts } from '../repositories/access-facts';
import type { User, UsersRepository } from '../repositories/users';

export class ApiKeyAuth {
  constructor(private readonly users: UsersRepository) {}

  /**
   * GET routes: `userId` must name a user (401 Invalid User), then `apikey` must be that user's
   * live key (401 Unauthorized: Invalid API Key). A missing key is an invalid key.
   */
  verifyUserKey(userId: string, apikey: string | undefined): void {
    this.checkUserKey(this.users.keyHashOf(userId), apikey);
  }

  /** verifyUserKey on facts the caller already read (the user and their live key digest). */
  checkUserKey(key: KeyFacts, apikey: string | undefined): void {
    if (!key.exists) throw new ApiError('invalidUser');
    if (apikey === undefined || apikey === '' || key.liveKeyHash === undefined || !secretMatchesDigest(apikey, key.liveKeyHash)) throw new ApiError('invalidApiKey');
  }

  /**
   * POST routes: the key must be someone's live key (401 Unauthorized: Invalid API Key) and that
   * someone must be `userId` (401 Invalid User).
   */
  verifyKeyOwner(apiKey: string, userId: string): User {
    if (this.isLiveKeyOf(userId, apiKey)) {
      const user = this.users.findById(userId);
      if (user) return user;
    }
    if (this.users.findUserByLiveKeyHash(sha256Hex(apiKey))) throw new ApiError('invalidUser');
    throw new ApiError('invalidApiKey');
  }

  /** Analytics API: the owner of an `x-api-key` (401 Unauthorized: Invalid API Key). */
  userOfKey(apiKey: string | undefined): User {
    const user = apiKey === undefined || apiKey === '' ? undefined : this.users.findUserByLiveKeyHash(sha256Hex(apiKey));
    if (!user) throw new ApiError('invalidApiKey');
    return user;
  }

  private isLiveKeyOf(userId: string, presented: string): boolean {
    const digest = this.users.liveKeyHash(userId);
    return digest !== undefined && secretMatchesDigest(presented, digest);
  }
}
