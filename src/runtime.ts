import type { Clock } from './clock.js';
import type { Config } from './config.js';
import { loadOrCreateSecretKey } from './crypto/secret-key-file.js';
import { resolveAdminToken } from './services/bootstrap.js';
import { createServices, type Services } from './services/services.js';
import { openStore } from './store/open-store.js';
import type { Store } from './store/store.js';

export interface Runtime {
  store: Store;
  services: Services;
  /** Set when this start generated the admin token (shown once). */
  generatedAdminToken: string | null;
}

/** Opens the store (migrated) and builds the service layer from configuration: shared by `serve` and the CLI. */
export async function openRuntime(
  config: Config,
  clock: Clock,
  options: { generateAdminToken: boolean; onBackgroundError: (error: unknown) => void },
): Promise<Runtime> {
  const store = await openStore(config.database);
  try {
    const secretKey = config.secretKey ?? (config.database.kind === 'sqlite' ? loadOrCreateSecretKey(config.database.path) : null);
    if (!secretKey) throw new Error('PUNCTUAL_SECRET_KEY is required');
    const admin = await resolveAdminToken(store, config.adminToken, options.generateAdminToken);
    const services = createServices({
      store,
      clock,
      plans: config.plans,
      secretKey,
      adminTokenHash: admin.hash,
      allowPrivateWebhooks: config.allowPrivateWebhooks,
      onBackgroundError: options.onBackgroundError,
    });
    return { store, services, generatedAdminToken: admin.generated };
  } catch (error) {
    await store.close();
    throw error;
  }
}
