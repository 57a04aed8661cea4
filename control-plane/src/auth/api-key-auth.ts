// API key authentication for the build & project API (key in query or body) and the analytics
// API (x-api-key): the key's SHA-256 digest compared in constant time against the user's one live
// key, or looked up among live keys (a digest tells nothing of a key). Every check is one read.
import { secretMatchesDigest, sha256Hex } from '../lib/secrets';
import { ApiError } from '../errors';
import type { KeyFacts } from '../repositories/access-facts';
import type { User, UsersRepository } from '../repositories/users';

export class ApiKeyAuth {
  constructor(private readonly users: UsersRepository) {}

  /**
   * GET routes: `userId` must name a user (401 Invalid User), then `apikey` must be that user's
   * live key (401 Unauthorized: Invalid API Key). A missing key is an invalid key. One read.
   */
  async verifyUserKey(userId: string, apikey: string | undefined): Promise<void> {
    this.checkUserKey(await this.users.keyHashOf(userId), apikey);
  }

  /** verifyUserKey on facts the caller already read (the user and their live key digest). */
  checkUserKey(key: KeyFacts, apikey: string | undefined): void {
    if (!key.exists) throw new ApiError('invalidUser');
    if (apikey === undefined || apikey === '' || key.liveKeyHash === undefined || !secretMatchesDigest(apikey, key.liveKeyHash)) throw new ApiError('invalidApiKey');
  }

  /**
   * POST routes: the key must be someone's live key (401 Unauthorized: Invalid API Key) and that
   * someone must be `userId` (401 Invalid User). One read: the owner of the key's digest (digests
   * are unique, and a user has at most one live key).
   */
  async verifyKeyOwner(apiKey: string, userId: string): Promise<User> {
    const owner = await this.users.findUserByLiveKeyHash(sha256Hex(apiKey));
    if (owner === undefined) throw new ApiError('invalidApiKey');
    if (owner.userId !== userId) throw new ApiError('invalidUser');
    return owner;
  }

  /** Analytics API: the owner of an `x-api-key` (401 Unauthorized: Invalid API Key). One read. */
  async userOfKey(apiKey: string | undefined): Promise<User> {
    const user = apiKey === undefined || apiKey === '' ? undefined : await this.users.findUserByLiveKeyHash(sha256Hex(apiKey));
    if (!user) throw new ApiError('invalidApiKey');
    return user;
  }
}
