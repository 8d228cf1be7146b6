import { required, type Command } from '../command.js';

export const userCommands: Command[] = [
  {
    name: 'users create',
    args: '--email <email> [--team <teamId>] [--operator] [--password <password>]',
    summary: 'a dashboard user; without --password one is generated and printed once',
    options: ['email', 'team', 'operator', 'password'],
    run: ({ services, args: { values } }) =>
      services.users.create({
        email: required(values, 'email'),
        ...(values.password !== undefined && { password: values.password }),
        teamIds: values.team ? [values.team] : [],
        operator: values.operator === true,
      }),
  },
  {
    name: 'users list',
    table: { rows: 'users', columns: ['userId', 'email', 'operator', 'teams', 'createdAt'] },
    run: ({ services }) => services.users.list(),
  },
  {
    name: 'users add-team',
    args: '--email <email> --team <teamId>',
    options: ['email', 'team'],
    run: ({ services, args: { values } }) => services.users.addToTeam(required(values, 'email'), required(values, 'team')),
  },
  {
    name: 'users reset-password',
    args: '--email <email> [--password <password>]',
    summary: "also ends the user's sessions",
    options: ['email', 'password'],
    run: ({ services, args: { values } }) => services.users.resetPassword(required(values, 'email'), values.password),
  },
];
