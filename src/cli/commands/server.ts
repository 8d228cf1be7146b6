/** The commands that run a process rather than answer: the server, the local receiver, migrations. */
import { UsageError, type Command } from '../command.js';
import { listen } from '../listen.js';

export const serverCommands: Command[] = [
  {
    name: 'serve',
    summary: 'start the service (PORT, DATABASE_URL, …)',
    opens: 'config',
    // Loaded only here: the HTTP server and the dashboard are most of what the other commands would load for nothing.
    run: async ({ config }) => (await import('../../server.js')).serve(config),
  },
  {
    name: 'listen',
    args: '[--port <port>] [--secret <whsec_…>]',
    summary: 'a local webhook receiver that verifies and prints deliveries',
    options: ['port', 'secret'],
    opens: 'nothing',
    run: async ({ args: { values } }) => {
      const port = Number(values.port ?? 4000);
      if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be a port number');
      const receiver = await listen({ port, host: '127.0.0.1', secret: values.secret ?? null, print: (line) => console.log(line) });
      console.error(
        `Listening on http://127.0.0.1:${receiver.port}/ ${values.secret ? '(verifying signatures)' : '(pass --secret whsec_… to verify signatures)'}\n` +
          `Point a project at it: PATCH /manage/v1/projects/:projectId {"webhookUrl": "http://127.0.0.1:${receiver.port}/"}`,
      );
    },
  },
  {
    name: 'migrate',
    summary: 'apply database migrations and exit',
    // Opening the store migrates it.
    run: async ({ runtime }) => ({ migrated: true, store: runtime.store.kind }),
  },
];
