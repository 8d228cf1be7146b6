import { required, type Command } from '../command.js';

export const secretCommands: Command[] = [
  {
    name: 'secret list',
    args: '--project <projectId>',
    summary: 'the webhook secrets signing now, newest first',
    options: ['project'],
    table: { rows: 'webhookSecrets', columns: ['webhookSecret', 'createdAt', 'expiresAt'] },
    run: ({ services, args: { values } }) => services.manage.listWebhookSecrets(required(values, 'project')),
  },
  {
    name: 'secret rotate',
    args: '--project <projectId>',
    summary: 'the previous secret keeps signing for 24 hours',
    options: ['project'],
    run: ({ services, args: { values } }) => services.manage.rotateWebhookSecret(required(values, 'project')),
  },
];
