import { randomBytes } from 'node:crypto';
import { randomBase62 } from '../crypto/random-ids.js';
import { InvalidRequestError } from '../errors.js';
import type { Store } from '../store/store.js';
import { sha256 } from './auth/auth-service.js';
import type { ManageService } from './manage-service.js';
import type { UserService } from './auth/user-service.js';

const ADMIN_TOKEN_SETTING = 'admin_token_sha256';
const BOOTSTRAP_SETTING = 'bootstrapped_at';

export interface FirstStart {
  teamId: string;
  projectId: string;
  apiKey: string;
  webhookSecret: string;
  webhookUrl: string | null;
  /** The first dashboard user (an operator), with its generated password; null when none was made. */
  user: FirstUser | null;
}

interface FirstUser {
  email: string;
  password: string;
}

/**
 * The first dashboard user, an operator (sees every team), with a generated password to print
 * once. Only while there is no user at all: on an upgraded install this creates the first user
 * too. When several instances start together, the unique email lets exactly one create it.
 */
export async function createFirstUser(store: Store, users: UserService, options: { email: string; teamIds: string[] }): Promise<FirstUser | null> {
  if ((await store.userCount()) > 0) return null;
  try {
    const created = await users.create({ email: options.email, teamIds: options.teamIds, operator: true });
    return { email: created.email, password: created.password! };
  } catch (error) {
    if (error instanceof InvalidRequestError && error.data.field === 'email') return null;
    throw error;
  }
}

/**
 * The admin token's hash: PUNCTUAL_ADMIN_TOKEN when set, else one generated on the first start,
 * kept (hashed) in the database and shown once.
 */
export async function resolveAdminToken(
  store: Store,
  configured: string | null,
  mayGenerate: boolean,
): Promise<{ hash: Buffer; generated: string | null }> {
  if (configured) return { hash: sha256(configured), generated: null };
  if (!mayGenerate) {
    // The CLI never generates the token: it could not show it where the operator looks (the server's first start).
    const stored = await store.settingGet(ADMIN_TOKEN_SETTING);
    return { hash: stored ? Buffer.from(stored, 'hex') : randomBytes(32), generated: null };
  }
  const candidate = `adm_${randomBase62(40)}`;
  const candidateHash = sha256(candidate).toString('hex');
  const stored = await store.settingInsertIfAbsent(ADMIN_TOKEN_SETTING, candidateHash);
  return { hash: Buffer.from(stored, 'hex'), generated: stored === candidateHash ? candidate : null };
}

/**
 * On an empty database: a team on the unlimited plan, a project and an API key. The setting row
 * makes this happen once even when several instances start together on one database.
 */
export async function bootstrapFirstStart(
  store: Store,
  manage: ManageService,
  options: { now: number; devReceiverUrl: string | null; firstUser?: { users: UserService; email: string } },
): Promise<FirstStart | null> {
  if ((await store.teamCount()) > 0) return null;
  const marker = String(options.now);
  if ((await store.settingInsertIfAbsent(BOOTSTRAP_SETTING, marker)) !== marker) return null;
  const team = await manage.createTeam({ name: 'Default team', plan: 'unlimited' });
  const project = await manage.createProject(team.teamId, {
    name: 'Default project',
    ...(options.devReceiverUrl !== null && { webhookUrl: options.devReceiverUrl }),
  });
  const key = await manage.createKey(project.projectId, { name: 'default' });
  const user = options.firstUser ? await createFirstUser(store, options.firstUser.users, { email: options.firstUser.email, teamIds: [team.teamId] }) : null;
  return {
    user,
    teamId: team.teamId,
    projectId: project.projectId,
    apiKey: key.key,
    webhookSecret: project.webhookSecret,
    webhookUrl: project.webhookUrl,
  };
}

function firstUserLines(user: FirstUser, publicUrl: string): string[] {
  return [
    `  Dashboard        ${publicUrl}/   log in as ${user.email}`,
    `  Password         ${user.password}   (change it under Account)`,
  ];
}

/** For an install that has teams but no dashboard user yet (an upgrade): how to log in, shown once. */
export function firstUserMessage(user: FirstUser, publicUrl: string): string {
  return ['A first dashboard user was created (shown once; an operator, seeing every team):', ...firstUserLines(user, publicUrl)].join('\n');
}

export function firstStartMessage(first: FirstStart, options: { publicUrl: string; adminToken: string | null }): string {
  const line = '─'.repeat(72);
  const dispatch = `curl -X POST ${options.publicUrl}/api/jobs/dispatch \\
  -H "Authorization: Bearer ${first.apiKey}" \\
  -H "Content-Type: application/json" \\
  -d '{"payload": {"hello": "world"}}'`;
  return [
    line,
    'Punctual is set up. These are shown once: keep them somewhere safe.',
    '',
    `  API key          ${first.apiKey}`,
    `  Webhook secret   ${first.webhookSecret}`,
    ...(first.user ? firstUserLines(first.user, options.publicUrl) : []),
    ...(options.adminToken ? [`  Admin token      ${options.adminToken}   (for the /manage/v1 API)`] : []),
    `  Team             ${first.teamId} (plan: unlimited)`,
    `  Project          ${first.projectId}`,
    first.webhookUrl
      ? `  Webhook URL      ${first.webhookUrl} (the built-in development receiver)`
      : `  Webhook URL      not set: PATCH /manage/v1/projects/${first.projectId} {"webhookUrl": "https://…"}`,
    '',
    'Dispatch your first job:',
    '',
    dispatch,
    '',
    `API docs: ${options.publicUrl}/docs`,
    line,
  ].join('\n');
}
