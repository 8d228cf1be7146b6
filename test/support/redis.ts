import { Redis } from 'ioredis';

export const REDIS_TEST_URL = process.env.REDIS_URL?.startsWith('redis://') ? process.env.REDIS_URL : 'redis://127.0.0.1:6379';

/** Whether Redis tests run: unreachable fails in CI, and is skipped with the reason printed elsewhere. */
export async function redisAvailable(): Promise<boolean> {
  const redis = new Redis(REDIS_TEST_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000, retryStrategy: () => null });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
    return true;
  } catch (error) {
    if (process.env.CI) throw new Error(`Redis at ${REDIS_TEST_URL} is unreachable in CI: ${(error as Error).message}`);
    console.warn(`SKIPPING Redis tests: ${REDIS_TEST_URL} is unreachable (${(error as Error).message}). Start Redis or set REDIS_URL.`);
    return false;
  } finally {
    redis.disconnect();
  }
}
