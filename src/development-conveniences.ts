import { BlockList, isIP } from 'node:net';

/**
 * The development conveniences: the receiver at /dev/receiver, which shows the deliveries it got
 * to anyone who asks, and private webhook addresses, with which a webhook (or a test delivery,
 * whose answer the dashboard shows) reaches services on the server's own network. Both make the
 * quickstart work on a developer's machine and are a leak on a public address. So unless
 * PUNCTUAL_DEV_RECEIVER and PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS say otherwise, they are on only where
 * nothing but this machine reaches the service: outside production, listening on a loopback
 * address, known to clients by a loopback URL, and with no proxy in front that forwards requests
 * from elsewhere.
 */
export interface DevelopmentDefaults {
  /** Whether both conveniences are on unless their variables say otherwise. */
  on: boolean;
  /** Why, in words for the start-up log: "HOST 0.0.0.0 is not a loopback address". */
  reason: string;
  /** The variables that were set, and so win over the default. */
  explicit: ConvenienceVariable[];
}

export type ConvenienceVariable = 'PUNCTUAL_DEV_RECEIVER' | 'PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS';

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/**
 * 127.0.0.0/8, ::1 (in any spelling, and IPv4-mapped 127.x: BlockList matches those to the IPv4
 * rule) or the name localhost. Any other name counts as not loopback: what it resolves to can
 * change, and a wrong "yes" exposes more than a wrong "no".
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (bare.toLowerCase() === 'localhost') return true;
  const family = isIP(bare);
  return family !== 0 && loopback.check(bare, family === 4 ? 'ipv4' : 'ipv6');
}

export function developmentDefaults(options: {
  production: boolean;
  host: string;
  publicUrl: string;
  proxyTrusted: boolean;
  explicit: ConvenienceVariable[];
}): DevelopmentDefaults {
  const { explicit } = options;
  if (options.production) return { on: false, reason: 'NODE_ENV=production', explicit };
  if (!isLoopbackHost(options.host)) return { on: false, reason: `HOST ${options.host} is not a loopback address`, explicit };
  const publicHost = new URL(options.publicUrl).hostname;
  if (!isLoopbackHost(publicHost)) return { on: false, reason: `PUNCTUAL_PUBLIC_URL's host ${publicHost} is not a loopback address`, explicit };
  if (options.proxyTrusted) return { on: false, reason: 'PUNCTUAL_TRUST_PROXY is set, so a proxy forwards requests from elsewhere', explicit };
  return { on: true, reason: `listening on ${options.host}, a loopback address, outside production`, explicit };
}

export interface StartupNotice {
  level: 'info' | 'warn';
  fields: { devReceiver: boolean; privateWebhooks: boolean };
  message: string;
}

/**
 * The start-up log line that says which conveniences are on and why: a warning when one was asked
 * for where the default would have kept it off, since that is where it exposes something. Null in
 * production with both off, the expected state there, as it was before the line existed.
 */
export function developmentConveniencesNotice(config: {
  production: boolean;
  devReceiver: boolean;
  allowPrivateWebhooks: boolean;
  developmentDefaults: DevelopmentDefaults;
}): StartupNotice | null {
  const defaults = config.developmentDefaults;
  const fields = { devReceiver: config.devReceiver, privateWebhooks: config.allowPrivateWebhooks };
  const on = [
    ...(config.devReceiver ? ['the development receiver at /dev/receiver'] : []),
    ...(config.allowPrivateWebhooks ? ['private webhook addresses'] : []),
  ];
  if (on.length === 0) {
    // Both set to false where they default to on: whoever set them knows.
    if (config.production || defaults.on) return null;
    return {
      level: 'info',
      fields,
      message: `development conveniences off, because ${defaults.reason}: PUNCTUAL_DEV_RECEIVER=true and PUNCTUAL_ALLOW_PRIVATE_WEBHOOKS=true turn them on`,
    };
  }
  if (defaults.on) return { level: 'info', fields, message: `development conveniences on (${defaults.reason}): ${on.join(', ')}` };
  // Off by default here, so whatever is on was set explicitly.
  const exposed = [
    ...(config.devReceiver ? ['anyone who reaches this service can read the deliveries at GET /dev/receiver'] : []),
    ...(config.allowPrivateWebhooks ? ["webhooks and test deliveries can reach this network's private addresses"] : []),
  ];
  const setBy = defaults.explicit
    .filter((name) => (name === 'PUNCTUAL_DEV_RECEIVER' ? config.devReceiver : config.allowPrivateWebhooks))
    .map((name) => `${name}=true`);
  return {
    level: 'warn',
    fields,
    message: `development conveniences on though ${defaults.reason} (${setBy.join(', ')}): ${exposed.join('; ')}`,
  };
}
