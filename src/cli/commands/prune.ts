import type { PruneCounts } from '../../store/store.js';
import type { Command } from '../command.js';

const describe = (counts: PruneCounts) =>
  `deleted ${counts.jobs} jobs, ${counts.attempts} attempts, ${counts.idempotencyKeys} idempotency keys, ${counts.usageRows} usage days, ${counts.events} events so far`;

export const pruneCommands: Command[] = [
  {
    name: 'prune',
    args: '[--dry-run]',
    summary: 'delete now what retention deletes (SPEC section 12); --dry-run only counts it',
    options: ['dry-run'],
    run: async ({ services, args: { values }, progress }) =>
      values['dry-run'] ? { dryRun: true, ...(await services.retention.preview()) } : { dryRun: false, ...(await services.retention.prune((soFar) => progress(describe(soFar)))) },
  },
];
